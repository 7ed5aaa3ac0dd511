//! PostgreSQL, for several daemons on one database: one pool per daemon,
//! advisory locks where SQLite had a single writer or a single daemon
//! (the write transactions' locks are in `write.rs`, grouped writes in
//! `group.rs`).

pub(crate) mod group;
pub(crate) mod sql;
pub(crate) mod write;

use std::time::Duration;

use anyhow::Context;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, Connection};

use crate::db::DatabaseUrl;

/// Connections per daemon. Long-polls and event streams hold none while
/// they wait, so this bounds concurrent queries, not clients.
const CONNECTIONS: u32 = 16;

/// How long a pooled connection may sit idle before it is pinged as it is
/// taken. sqlx pings every connection as it comes back to the pool; one
/// handed out again soon after needs no second ping, which would be a round
/// trip on the critical path of every query.
const PING_AFTER_IDLE: Duration = Duration::from_secs(1);

/// What a daemon keeps for PostgreSQL's writes: the pool they take
/// connections from, the gate of their after-commit steps, and the
/// runners of grouped writes.
#[derive(Debug)]
pub(crate) struct Pg {
    pub(super) pool: AnyPool,
    pub(super) follow_up: write::FollowUp,
    pub(super) groups: group::Groups,
}

impl Pg {
    pub(super) fn new(pool: AnyPool) -> Self {
        Self {
            pool,
            follow_up: write::FollowUp::default(),
            groups: group::Groups::default(),
        }
    }
}

/// Connects the daemon's pool.
pub(super) async fn open(url: &DatabaseUrl) -> anyhow::Result<AnyPool> {
    sqlx::any::install_default_drivers();
    let DatabaseUrl::Postgres(text) = url else {
        unreachable!("only PostgreSQL URLs come here")
    };
    let options: AnyConnectOptions = text
        .parse()
        .with_context(|| format!("cannot use the database URL {url}"))?;
    AnyPoolOptions::new()
        .max_connections(CONNECTIONS)
        .acquire_timeout(Duration::from_secs(10))
        // A connection lost while idle (the server restarted, its backend
        // terminated) is found and replaced here rather than failing the
        // query; one lost since its last ping fails its query, which the
        // caller answers `503 storage_unavailable`.
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for >= PING_AFTER_IDLE {
                    conn.ping().await?;
                }
                Ok(true)
            })
        })
        .connect_with(options)
        .await
        .with_context(|| {
            format!(
                "cannot connect to PostgreSQL at {url}: is it running, and does the database exist?"
            )
        })
}

/// Runs `job` while holding the session-level advisory lock named `name`,
/// or skips it (`None`) when another daemon holds it.
pub(super) async fn exclusively<F, T>(
    pool: &AnyPool,
    name: &str,
    job: F,
) -> anyhow::Result<Option<T>>
where
    F: std::future::Future<Output = anyhow::Result<T>>,
{
    let key = lock_key(name);
    let mut conn = pool.acquire().await?;
    let taken: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
        .bind(key)
        .fetch_one(&mut *conn)
        .await?;
    if !taken {
        return Ok(None);
    }
    let outcome = job.await;
    let released = sqlx::query_scalar::<_, bool>("SELECT pg_advisory_unlock($1)")
        .bind(key)
        .fetch_one(&mut *conn)
        .await;
    if released.is_err() {
        // A session lock lives as long as its connection: never hand a
        // connection that may still hold it back to the pool.
        conn.close_on_drop();
    }
    outcome.map(Some)
}

/// A stable 64-bit key for a job name (FNV-1a), so every daemon of every
/// version agrees on it.
pub(super) fn lock_key(name: &str) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in name.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash as i64
}

/// PostgreSQL's disk_full (53100) and read_only_sql_transaction (25006).
pub(super) fn is_storage_error(err: &(dyn sqlx::error::DatabaseError + 'static)) -> bool {
    err.try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
        .is_some_and(|e| matches!(e.code(), "53100" | "25006"))
}

/// PostgreSQL's connection_exception class (08…), admin_shutdown (57P01,
/// `pg_terminate_backend` or a fast shutdown), crash_shutdown (57P02),
/// cannot_connect_now (57P03, starting up) and too_many_connections (53300).
pub(super) fn is_connection_error(err: &(dyn sqlx::error::DatabaseError + 'static)) -> bool {
    err.try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
        .is_some_and(|e| {
            e.code().starts_with("08") || matches!(e.code(), "57P01" | "57P02" | "57P03" | "53300")
        })
}

/// PostgreSQL stopped the statement and rolled its transaction back, for a
/// reason that passes: query_canceled (57014: `statement_timeout` or
/// `pg_cancel_backend`), lock_not_available (55P03: `lock_timeout`) and
/// deadlock_detected (40P01: the server broke a wait-for circle between
/// concurrent writers). Retrying succeeds.
pub(super) fn is_interrupted(err: &(dyn sqlx::error::DatabaseError + 'static)) -> bool {
    err.try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
        .is_some_and(|e| matches!(e.code(), "57014" | "55P03" | "40P01"))
}

/// The channel on which every daemon hears which session changed.
const CHANGES: &str = "widgetd_changes";

/// Tells every daemon that `sessions` changed, in one statement (outside
/// any transaction; after the commits that changed them). PostgreSQL
/// delivers one notification per distinct payload.
pub(super) async fn notify_changes(pool: &AnyPool, sessions: &[String]) -> sqlx::Result<()> {
    // Session ids hold no comma. A SELECT that returns an integer: the Any
    // driver cannot carry PostgreSQL's `void`.
    sqlx::query(
        "SELECT count(*) FROM (SELECT pg_notify($1, s) FROM unnest(string_to_array($2, ',')) AS s) AS sent",
    )
    .bind(CHANGES)
    .bind(sessions.join(","))
    .execute(pool)
    .await?;
    Ok(())
}

/// Hears the changes of every daemon until the process ends: `changed`
/// gets each session id, and `None` after (re)connecting, when
/// notifications may have been missed and everything must be re-read.
pub(super) async fn follow_changes(url: String, changed: impl Fn(Option<&str>)) {
    use sqlx::postgres::PgListener;
    let mut retry = Duration::from_millis(100);
    loop {
        let listening = async {
            let mut listener = PgListener::connect(&url).await?;
            listener.listen(CHANGES).await?;
            Ok::<_, sqlx::Error>(listener)
        };
        let mut listener = match listening.await {
            Ok(listener) => listener,
            Err(err) => {
                tracing::warn!(error = %err, "cannot listen for other daemons' changes; retrying");
                tokio::time::sleep(retry).await;
                retry = (retry * 2).min(Duration::from_secs(5));
                continue;
            }
        };
        retry = Duration::from_millis(100);
        // Whatever happened while not listening is read again now.
        changed(None);
        // `try_recv` answers `None` when the connection is lost: then
        // connect anew (and catch up) rather than let it reconnect
        // silently.
        while let Ok(Some(note)) = listener.try_recv().await {
            changed(Some(note.payload()));
        }
        tracing::warn!("lost the connection that hears other daemons' changes; reconnecting");
    }
}

/// The auth epoch, and the stamp of the same statement's snapshot.
pub(super) async fn read_epoch(pool: &AnyPool) -> sqlx::Result<(i64, Option<crate::db::Stamp>)> {
    let sql = format!(
        "SELECT epoch, {} FROM auth_epoch, pg_current_snapshot() AS snapshot WHERE id = 1",
        crate::db::SNAPSHOT_COLUMNS
    );
    let (epoch, xmax, running): (i64, i64, i64) = sqlx::query_as(&sql).fetch_one(pool).await?;
    Ok((epoch, Some(crate::db::Stamp::of_snapshot(xmax, running))))
}
