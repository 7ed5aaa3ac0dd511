//! Whether the SQLite file may have changed since a reader looked: what an
//! in-memory copy of rows (the widget rows of `widgets/cache.rs`) checks
//! before it is served instead of asking the database again.
//!
//! A [`Stamp`] names the state of the file as far as this process can
//! tell. A copy read under one stamp may be served while the stamp is
//! unchanged; a reader takes the stamp *before* its query. Two things move
//! it:
//!
//! - This daemon's own writes: the writer (`writer.rs`) counts every batch
//!   it ends, after the `COMMIT` and before any member of the batch hears
//!   back. A write acknowledged to anyone has therefore moved the stamp of
//!   every request that arrives afterwards.
//! - Writes by another connection to the same file (the `widgetd` CLI, a
//!   test opening the file, the session store's own statements): SQLite's
//!   `PRAGMA data_version`, read on a connection of its own that never
//!   writes. Like the auth epoch (`auth/cache.rs`), one read serves every
//!   request of the next [`POLL`]: a change committed elsewhere moves the
//!   stamp of every request that asks [`POLL`] or more after the commit.
//!
//! On PostgreSQL, where several daemons write, the stamp is what the
//! server's snapshot tells ([`Stamp::of_snapshot`]): the first transaction
//! id not yet completed (`xmax`) and how many below it were still running.
//! Any transaction that completes moves one of the two: one that began
//! before the snapshot leaves its running list, one that began after moves
//! `xmax`. It is read in the same statement as the auth epoch
//! (`auth/cache.rs`), by a read that started after the request arrived, so
//! a commit acknowledged by any daemon before a request arrived has moved
//! that request's stamp. It needs PostgreSQL 13 (`pg_current_snapshot`).

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sqlx::any::AnyConnectOptions;
use sqlx::{AnyConnection, Connection};

/// How old (from its start) a `data_version` read may be when a stamp is
/// taken: the bound after which another process's commit is seen. The same
/// as the auth cache's (`auth::cache::POLL`).
pub const POLL: Duration = Duration::from_millis(5);

/// The state of the database as this process last knew it (see the
/// module's text). Equal stamps: nothing a reader saw can have changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp(Seen);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    /// SQLite.
    File {
        /// Batches this daemon's writer had ended.
        commits: u64,
        /// Which poll connection (a replaced one counts its versions
        /// afresh) and the `data_version` it read.
        connection: u64,
        version: i64,
    },
    /// PostgreSQL: a snapshot's `xmax` and the length of its list of
    /// running transactions.
    Snapshot { xmax: i64, running: i64 },
}

/// The columns a PostgreSQL statement adds to its select list for
/// [`Stamp::of_snapshot`], given `pg_current_snapshot() AS snapshot` in
/// its `FROM`: the statement's own snapshot, the one its rows were read in.
pub const SNAPSHOT_COLUMNS: &str = "pg_snapshot_xmax(snapshot)::text::bigint, \
     (SELECT count(*) FROM pg_snapshot_xip(snapshot))";

impl Stamp {
    /// The stamp of a PostgreSQL snapshot, from [`SNAPSHOT_COLUMNS`].
    ///
    /// Equal stamps mean no transaction completed between the two
    /// snapshots: transaction ids are handed out in order, so one that
    /// started after the first snapshot has an id of at least its `xmax`,
    /// and its end moves `xmax` past it; one below the first `xmax` that
    /// ends was on the first's running list and is not on the second's,
    /// and that list gains nothing while `xmax` stays (an id below it not
    /// on the list had already ended).
    pub fn of_snapshot(xmax: i64, running: i64) -> Self {
        Self(Seen::Snapshot { xmax, running })
    }

    /// Whether `self` was taken no earlier than `other`, as far as both
    /// tell; false when they disagree (taken by racing requests).
    pub fn not_before(&self, other: &Stamp) -> bool {
        match (self.0, other.0) {
            (
                Seen::File {
                    commits,
                    connection,
                    version,
                },
                Seen::File {
                    commits: other_commits,
                    connection: other_connection,
                    version: other_version,
                },
            ) => {
                commits >= other_commits
                    && (connection > other_connection
                        || (connection == other_connection && version >= other_version))
            }
            (
                Seen::Snapshot { xmax, running },
                Seen::Snapshot {
                    xmax: other_xmax,
                    running: other_running,
                },
            ) => xmax > other_xmax || (xmax == other_xmax && running <= other_running),
            _ => false,
        }
    }

    /// A stamp made up by a unit test.
    #[cfg(test)]
    pub(crate) fn made_up(commits: u64, version: i64) -> Self {
        Self(Seen::File {
            commits,
            connection: 1,
            version,
        })
    }
}

/// A `data_version` read: when it started, and which connection read what
/// (`None` when it failed).
#[derive(Clone, Copy)]
struct Poll {
    started: Instant,
    read: Option<(u64, i64)>,
}

/// The stamps of one SQLite database.
pub(super) struct Changes {
    /// The read pool's options, for the poll connection.
    options: Arc<AnyConnectOptions>,
    /// Batches ended by the writer (`writer.rs` counts them).
    commits: Arc<AtomicU64>,
    /// The poll connection, opened on first use; held while a poll runs, so
    /// one runs at a time. `None` inside once closed for good.
    conn: tokio::sync::Mutex<PollConn>,
    last: Mutex<Option<Poll>>,
}

/// The poll connection's state.
enum PollConn {
    NotOpen { opened: u64 },
    Open { serial: u64, conn: AnyConnection },
    Closed,
}

impl std::fmt::Debug for Changes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Changes")
            .field("commits", &self.commits.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Changes {
    pub(super) fn new(options: Arc<AnyConnectOptions>, commits: Arc<AtomicU64>) -> Self {
        Self {
            options,
            commits,
            conn: tokio::sync::Mutex::new(PollConn::NotOpen { opened: 0 }),
            last: Mutex::new(None),
        }
    }

    /// The current stamp; `None` when `data_version` cannot be read (no
    /// copy may then be served or kept).
    pub(super) async fn stamp(&self) -> Option<Stamp> {
        let (connection, version) = self.data_version().await?;
        // Read after the poll: a commit the poll missed but the counter
        // shows still moves the stamp.
        let commits = self.commits.load(Ordering::SeqCst);
        Some(Stamp(Seen::File {
            commits,
            connection,
            version,
        }))
    }

    /// The last poll if it started at most [`POLL`] ago.
    fn fresh(&self) -> Option<Option<(u64, i64)>> {
        let last = *self.last.lock().expect("not poisoned");
        last.filter(|poll| poll.started.elapsed() <= POLL)
            .map(|poll| poll.read)
    }

    async fn data_version(&self) -> Option<(u64, i64)> {
        if let Some(read) = self.fresh() {
            return read;
        }
        let mut conn = self.conn.lock().await;
        // Someone else may have polled while this request waited.
        if let Some(read) = self.fresh() {
            return read;
        }
        let started = Instant::now();
        let read = poll(&self.options, &mut conn).await;
        *self.last.lock().expect("not poisoned") = Some(Poll { started, read });
        read
    }

    /// Closes the poll connection for good (before the pools close, so the
    /// last connection to close is theirs).
    pub(super) async fn close(&self) {
        let mut conn = self.conn.lock().await;
        if let PollConn::Open { conn: open, .. } = std::mem::replace(&mut *conn, PollConn::Closed) {
            let _ = open.close().await;
        }
    }
}

/// Reads `data_version` on the poll connection, opening it if need be; a
/// connection that fails is dropped and the next poll opens another.
async fn poll(options: &AnyConnectOptions, state: &mut PollConn) -> Option<(u64, i64)> {
    if let PollConn::NotOpen { opened } = *state {
        let conn = super::sqlite::connect(options).await.ok()?;
        *state = PollConn::Open {
            serial: opened + 1,
            conn,
        };
    }
    let PollConn::Open { serial, conn } = state else {
        return None;
    };
    let serial = *serial;
    match sqlx::query_scalar::<_, i64>("PRAGMA data_version")
        .fetch_one(&mut *conn)
        .await
    {
        Ok(version) => Some((serial, version)),
        Err(_) => {
            *state = PollConn::NotOpen { opened: serial };
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{POLL, Seen, Stamp};

    impl Stamp {
        /// The writer's count and the `data_version` of a SQLite stamp.
        fn file(&self) -> (u64, i64) {
            match self.0 {
                Seen::File {
                    commits, version, ..
                } => (commits, version),
                Seen::Snapshot { .. } => panic!("a PostgreSQL stamp"),
            }
        }
    }
    use crate::testing::TestDb;

    #[tokio::test]
    async fn the_stamp_moves_with_each_commit_here_at_once_and_elsewhere_within_the_poll() {
        let test = TestDb::new().await;
        let db = &test.db;
        let stamp = || async { db.stamp().await.expect("SQLite has a stamp") };
        let first = stamp().await;
        tokio::time::sleep(POLL * 2).await;
        assert_eq!(stamp().await, first, "nothing was written");

        // A write through the writer: counted before its commit returns.
        let mut tx = db.begin_write().await.unwrap();
        sqlx::query("UPDATE users SET name = 'bob'")
            .execute(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        let second = stamp().await;
        assert_eq!(second.file().0, first.file().0 + 1, "the writer's commit");

        // Another connection's commit, as the CLI's: seen by `data_version`
        // once the last poll is older than the bound.
        let mut other = super::super::sqlite::connect(&db.read.connect_options())
            .await
            .unwrap();
        sqlx::query("UPDATE users SET name = 'carol'")
            .execute(&mut other)
            .await
            .unwrap();
        tokio::time::sleep(POLL + std::time::Duration::from_millis(1)).await;
        let third = stamp().await;
        assert_eq!(third.file().0, second.file().0);
        assert_ne!(
            third.file().1,
            second.file().1,
            "another connection's commit"
        );
    }

    #[test]
    fn a_later_stamp_is_not_before_an_earlier_one() {
        let early = Stamp::made_up(3, 7);
        assert!(Stamp::made_up(4, 7).not_before(&early));
        assert!(Stamp::made_up(3, 8).not_before(&early));
        assert!(early.not_before(&early));
        assert!(!early.not_before(&Stamp::made_up(4, 7)));
        // Racing requests: neither is later.
        assert!(!Stamp::made_up(4, 6).not_before(&early));
        let reopened = Stamp(Seen::File {
            commits: 3,
            connection: 2,
            version: 1,
        });
        assert!(reopened.not_before(&early));
        // PostgreSQL: a later xmax, or the same with fewer running.
        let snapshot = Stamp::of_snapshot(100, 3);
        assert!(Stamp::of_snapshot(101, 9).not_before(&snapshot));
        assert!(Stamp::of_snapshot(100, 2).not_before(&snapshot));
        assert!(!snapshot.not_before(&Stamp::of_snapshot(100, 2)));
        assert!(!snapshot.not_before(&early));
    }
}
