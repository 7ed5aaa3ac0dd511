//! PostgreSQL's write transactions: concurrent, with locks only where two
//! of them must not interleave.
//!
//! Every write transaction takes the deployment's write lock *shared*, so
//! write transactions run and commit side by side and PostgreSQL groups
//! their WAL flushes; the few operations that must see no other writer
//! (re-keying the vault, creating the first data key, the first admin)
//! take it exclusively ([`crate::db::Db::begin_write_exclusive`]). What the
//! one exclusive lock used to give for free is kept by narrower locks
//! (`docs/architecture.md`, "Several daemons"):
//!
//! - the order of a session's events, transcript lines and widgets: a
//!   transaction takes the session's lock ([`lock`] with [`Lock::Session`])
//!   before it counts, inserts or changes them, so ids grow in commit order
//!   within a session and a `Last-Event-ID` replay never skips a row;
//! - rate-limit buckets and the count of admins: their own locks;
//! - the audit chain: rows are staged in `audit_pending` and sealed into
//!   the chain after the commit, by one sealer at a time
//!   (`audit/seal.rs`), through the hook a transaction registers with
//!   [`crate::db::WriteTx::after_commit`].

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::future::BoxFuture;
use sqlx::{Any, AnyConnection, AnyPool, Transaction};

use crate::db::Dialect;

/// The lock every write transaction of the deployment takes (shared), and
/// the few that must run alone take exclusively.
pub(crate) const WRITE_LOCK: i64 = 0x7769_6467_6574_6401; // "widget" + 1

/// Work to do once a transaction has committed, on the pool (the audit
/// sealer). One per transaction: registering the same hook twice is one.
pub type AfterCommit = fn(AnyPool) -> BoxFuture<'static, sqlx::Result<()>>;

/// A PostgreSQL write transaction.
pub(crate) struct PgWrite {
    pub(crate) tx: Transaction<'static, Any>,
    pub(crate) after: Option<AfterCommit>,
    /// Sessions whose change the other daemons hear of after the commit.
    pub(crate) notify: Vec<String>,
    /// The keys of the locks taken through [`PgWrite::lock_all`]: held to
    /// the end of the transaction, so not asked for again.
    pub(crate) held: Vec<(i32, i32)>,
}

impl PgWrite {
    /// Takes those of `locks` this transaction does not hold yet, as
    /// [`lock_all`] does: one round trip fewer for each lock taken again
    /// (a session's, by the widget and then by its event).
    pub(crate) async fn lock_all<'a>(
        &mut self,
        locks: impl IntoIterator<Item = Lock<'a>>,
    ) -> sqlx::Result<()> {
        let mut keys = sorted(locks);
        keys.retain(|key| !self.held.contains(key));
        take(&mut self.tx, &keys).await?;
        self.held.extend(keys);
        Ok(())
    }

    /// Commits, then runs the after-commit hook, if any, through
    /// `follow_up`.
    pub(crate) async fn commit(self, pool: &AnyPool, follow_up: &FollowUp) -> sqlx::Result<()> {
        let started = std::time::Instant::now();
        let done = self.tx.commit().await;
        match &done {
            Ok(()) => crate::db::stats::WRITES.committed(1, started.elapsed()),
            Err(_) => crate::db::stats::WRITES.failed(),
        }
        if done.is_ok() && (self.after.is_some() || !self.notify.is_empty()) {
            follow_up.after_commit(pool, self.after, self.notify).await;
        }
        done
    }
}

/// Runs what follows the commits of one daemon so that one run covers every
/// transaction that committed before it started: of many transactions
/// committing together, one runs the hook (the audit seal) and tells the
/// other daemons of every changed session, in one `NOTIFY` statement, and
/// the others wait for it instead of queueing one by one.
///
/// `NOTIFY` is not sent inside the write transaction: PostgreSQL holds a
/// lock of its own from a notifying transaction's commit until the commit
/// is flushed, so notifying transactions commit one at a time (seen as
/// `Lock:object` waits in `pg_stat_activity`). Sent after the commit it
/// still reaches the others only after the change is visible; if the
/// daemon dies in between, the others' streams and long-polls find the
/// change at their next periodic re-read.
#[derive(Debug, Default)]
pub(crate) struct FollowUp {
    /// Transactions committed with something to follow, counted.
    committed: AtomicU64,
    /// The count the last finished run covered.
    covered: tokio::sync::Mutex<u64>,
    /// What the next run does: the hook, if a transaction registered one,
    /// and the sessions to tell the other daemons of.
    due: std::sync::Mutex<(Option<AfterCommit>, BTreeSet<String>)>,
}

impl FollowUp {
    /// After a commit whose transaction registered `hook`: returns once a
    /// run of `hook` that started after the commit has ended. A failed run
    /// is logged, not returned: the transaction committed, and what the
    /// hook missed is caught up later (`audit/seal.rs`).
    pub(crate) async fn after_commit(
        &self,
        pool: &AnyPool,
        hook: Option<AfterCommit>,
        sessions: Vec<String>,
    ) {
        {
            let mut due = self.due.lock().unwrap_or_else(|p| p.into_inner());
            due.0 = due.0.or(hook);
            due.1.extend(sessions);
        }
        // Counted after the due work is recorded: a run that covers this
        // ticket sees it.
        let ticket = self.committed.fetch_add(1, Ordering::SeqCst) + 1;
        let mut covered = self.covered.lock().await;
        if *covered >= ticket {
            return;
        }
        let target = self.committed.load(Ordering::SeqCst);
        let (hook, sessions) = {
            let mut due = self.due.lock().unwrap_or_else(|p| p.into_inner());
            (due.0.take(), std::mem::take(&mut due.1))
        };
        if let Some(hook) = hook
            && let Err(err) = hook(pool.clone()).await
        {
            tracing::warn!(error = %err, "the after-commit step failed; it is retried");
        }
        if !sessions.is_empty() {
            let sessions: Vec<String> = sessions.into_iter().collect();
            if let Err(err) = super::notify_changes(pool, &sessions).await {
                tracing::warn!(error = %err, "could not tell the other daemons of a change; they find it at their next re-read");
            }
        }
        *covered = target;
    }
}

/// Begins a write transaction holding the deployment's write lock, shared
/// or (`exclusive`) alone, then `first`, in one statement.
pub(crate) async fn begin(
    pool: &AnyPool,
    exclusive: bool,
    first: Option<Lock<'_>>,
) -> sqlx::Result<PgWrite> {
    let mut tx = pool.begin().await?;
    // Wrapped in a SELECT that returns an integer: the Any driver cannot
    // carry PostgreSQL's `void`. A select list is evaluated left to right,
    // so the write lock is always taken before `first`, as in every other
    // transaction.
    let write = if exclusive {
        "pg_advisory_xact_lock($1)"
    } else {
        "pg_advisory_xact_lock_shared($1)"
    };
    let held: Vec<(i32, i32)> = first.map(Lock::keys).into_iter().collect();
    let first = if held.is_empty() {
        ""
    } else {
        ", pg_advisory_xact_lock($2, $3)"
    };
    let sql = format!("SELECT 1 FROM (SELECT {write}{first}) AS locked");
    let mut query = sqlx::query(&sql).bind(WRITE_LOCK);
    for &(class, key) in &held {
        query = query.bind(class).bind(key);
    }
    query.execute(&mut *tx).await?;
    Ok(PgWrite {
        tx,
        after: None,
        notify: Vec::new(),
        held,
    })
}

/// What a transaction may lock beyond its rows.
#[derive(Debug, Clone, Copy)]
pub enum Lock<'a> {
    /// A session: the order of its events, lines and widgets, and what its
    /// limits count.
    Session(&'a str),
    /// A rate-limit bucket, by key.
    Bucket(&'a str),
    /// The set of active admins (at least one must stay).
    Admins,
}

impl Lock<'_> {
    /// The lock's 64-bit key: its class in the first argument of the
    /// two-key advisory lock, a hash of the name in the second.
    pub(crate) fn keys(self) -> (i32, i32) {
        let (class, name) = match self {
            Self::Session(id) => (1, id),
            Self::Bucket(key) => (2, key),
            Self::Admins => (3, ""),
        };
        let hash = super::lock_key(name);
        (class, (hash ^ (hash >> 32)) as i32)
    }
}

/// Takes `what` until the end of the transaction on `conn` (taking it again
/// in the same transaction is free of waits). A no-op on SQLite, whose one
/// writer runs transactions one at a time. A transaction that needs
/// several takes them together, with [`lock_all`]. In a [`crate::db::WriteTx`],
/// prefer its own `lock`, which does not ask again for a lock it holds.
pub async fn lock(conn: &mut AnyConnection, what: Lock<'_>) -> sqlx::Result<()> {
    lock_all(conn, [what]).await
}

/// Takes several locks in the order of their keys, the same in every
/// transaction, so that two transactions never wait for each other in a
/// circle over them.
pub async fn lock_all<'a>(
    conn: &mut AnyConnection,
    locks: impl IntoIterator<Item = Lock<'a>>,
) -> sqlx::Result<()> {
    if Dialect::of(conn) == Dialect::Sqlite {
        return Ok(());
    }
    take(conn, &sorted(locks)).await
}

/// The keys of `locks`, sorted, each once.
fn sorted<'a>(locks: impl IntoIterator<Item = Lock<'a>>) -> Vec<(i32, i32)> {
    let mut keys: Vec<(i32, i32)> = locks.into_iter().map(Lock::keys).collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// Takes the locks of `keys`, in their order, until the end of the
/// transaction on `conn`.
async fn take(conn: &mut AnyConnection, keys: &[(i32, i32)]) -> sqlx::Result<()> {
    for &(class, key) in keys {
        sqlx::query("SELECT 1 FROM (SELECT pg_advisory_xact_lock($1, $2)) AS locked")
            .bind(class)
            .bind(key)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}
