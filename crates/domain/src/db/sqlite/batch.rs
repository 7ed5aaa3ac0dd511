//! The SQLite writer's connection and the batch open on it: opening a
//! batch with `BEGIN IMMEDIATE`, undoing a member's savepoint, the batch's
//! one `COMMIT` (one fsync at `synchronous=FULL`), and rolling it back.
//! Whoever holds the [`Core`] runs these: a member holding the writer
//! (`writer.rs`), or the task that runs the scripts members left for it
//! (`pipe.rs`). Neither holds the writer's memory (`memo.rs`) while
//! doing so, so whatever may have made the memory wrong is told to
//! [`Pipe::stale`], and the next member to hold the writer forgets it.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyConnection, AnyPool, Executor, Row};
use tokio::sync::{oneshot, watch};

use super::pipe::{Pipe, Reply};

/// Why a batch failed: the kind of the error (so a full disk still reads as
/// one to every member) and its text.
pub(crate) type Failure = (std::io::ErrorKind, Arc<str>);
/// How a batch ended: `None` while it is open.
pub(crate) type Outcome = Option<Result<(), Failure>>;

/// The writer's connection, with the batch open on it.
#[derive(Default)]
pub(crate) struct Core {
    /// Held from `BEGIN IMMEDIATE` to the batch's end, then back in the pool.
    pub conn: Option<PoolConnection<Any>>,
    pub batch: Option<Batch>,
    /// A member's savepoint is open (its member is alive, or was dropped
    /// where its undo could not be scheduled).
    pub in_savepoint: bool,
    /// The next member's savepoint is already open (opened in the same hop
    /// that released the last one).
    pub spare: bool,
    /// (connections opened, `data_version`) as the last batch began: when
    /// either moved, someone else may have changed what the memo holds.
    seen: Option<(u64, i64)>,
    /// When the connection kept from batch to batch was taken from the
    /// pool ([`KEEP`]).
    taken_at: Option<Instant>,
}

/// How long the writer keeps the pool's one connection from batch to batch
/// while it stays busy: handing it back and taking it again costs a batch
/// a spawned task and a ping on sqlx's thread; after this long it is handed
/// back anyway, so that whoever waits for it (a backup) gets it.
const KEEP: Duration = Duration::from_millis(20);

pub(crate) struct Batch {
    pub members: usize,
    /// Members that hold the writer hear the outcome here.
    pub done: watch::Sender<Outcome>,
    /// Members whose scripts ran for them hear it here (`pipe.rs`).
    pub waiting: Vec<oneshot::Sender<Reply>>,
}

impl Core {
    /// The open batch's connection.
    pub fn conn(&mut self) -> &mut AnyConnection {
        self.conn
            .as_mut()
            .expect("an open batch holds the connection")
    }

    /// `BEGIN IMMEDIATE` (with the first member's savepoint when
    /// `savepoint`) in one hop; the memo is stale if another connection
    /// wrote since the last batch.
    pub async fn open(&mut self, pool: &AnyPool, savepoint: bool, pipe: &Pipe) -> sqlx::Result<()> {
        let kept = self.conn.take();
        let mut conn = match kept {
            Some(conn) if self.taken_at.is_some_and(|at| at.elapsed() < KEEP) => conn,
            kept => {
                drop(kept);
                self.taken_at = None;
                let conn = pool.acquire().await?;
                self.taken_at = Some(Instant::now());
                conn
            }
        };
        let opened = super::connections_opened();
        let sql = match savepoint {
            true => "BEGIN IMMEDIATE; SAVEPOINT member; PRAGMA data_version",
            false => "BEGIN IMMEDIATE; PRAGMA data_version",
        };
        let begun = conn.fetch_all(sqlx::raw_sql(sql)).await;
        let version = match begun {
            Ok(rows) => rows.first().map_or(Ok(0), |row| row.try_get::<i64, _>(0)),
            Err(e) => Err(e),
        };
        let version = match version {
            Ok(version) => version,
            Err(e) => {
                // BEGIN may have run before what failed.
                let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
                // A connection that met a read-only disk may have been
                // reopened read-only by SQLite and would stay so once the
                // disk is writable again: the next batch gets a new one.
                if crate::db::storage_unavailable(&e) {
                    conn.close_on_drop();
                }
                self.taken_at = None;
                return Err(e);
            }
        };
        if self.seen != Some((opened, version)) {
            pipe.stale();
            self.seen = Some((opened, version));
        }
        self.conn = Some(conn);
        self.spare = savepoint;
        self.batch = Some(Batch {
            members: 0,
            done: watch::channel(None).0,
            waiting: Vec::new(),
        });
        Ok(())
    }

    /// The connection kept between batches, to hand back to the pool now
    /// that nobody is about to use it; `None` while a batch is open.
    pub fn release(&mut self) -> Option<PoolConnection<Any>> {
        if self.batch.is_some() {
            return None;
        }
        self.taken_at = None;
        self.conn.take()
    }

    /// Whether it holds the connection without an open batch.
    pub fn holds_idle(&self) -> bool {
        self.batch.is_none() && self.conn.is_some()
    }

    /// Undoes the open member's savepoint, in one hop; with `spare`, opens
    /// the next member's savepoint in it too. The caller forgets what the
    /// member changed in the memo.
    pub async fn undo_member(&mut self, spare: bool) -> sqlx::Result<()> {
        let conn = self.conn();
        let sql = if spare {
            "ROLLBACK TO member; RELEASE member; SAVEPOINT member"
        } else {
            "ROLLBACK TO member; RELEASE member"
        };
        let mut undone = conn.execute(sqlx::raw_sql(sql)).await.map(drop);
        if let Err(e) = &undone
            && e.to_string().contains("no such savepoint")
            && released_in_batch(conn).await
        {
            // Its last write ran up to its release and was abandoned before
            // the next savepoint opened: its writes stand, as a commit whose
            // answer was lost.
            undone = match spare {
                true => conn.execute("SAVEPOINT member").await.map(drop),
                false => Ok(()),
            };
        }
        self.in_savepoint = false;
        self.spare = spare && undone.is_ok();
        undone
    }

    /// The outer `COMMIT` (which also ends any savepoint still open), then
    /// every member hears how it went.
    pub async fn commit(&mut self, pipe: &Pipe) {
        let batch = self.batch.take().expect("commit of an open batch");
        self.spare = false;
        self.in_savepoint = false;
        let mut conn = self
            .conn
            .take()
            .expect("an open batch holds the connection");
        let started = std::time::Instant::now();
        let outcome = match sqlx::query("COMMIT").execute(&mut *conn).await {
            Ok(_) => {
                crate::db::stats::WRITES.committed(batch.members, started.elapsed());
                // Kept for the next batch; handed back once idle (`release`).
                self.conn = Some(conn);
                Ok(())
            }
            Err(e) => {
                crate::db::stats::WRITES.failed();
                tracing::error!(error = %e, members = batch.members, "a group commit failed");
                pipe.stale();
                // A failed COMMIT can leave the transaction open; after a
                // full or read-only disk, the next batch starts on a new
                // connection.
                let rolled_back = sqlx::query("ROLLBACK").execute(&mut *conn).await.is_ok();
                if !rolled_back || crate::db::storage_unavailable(&e) {
                    conn.close_on_drop();
                }
                self.taken_at = None;
                Err(failure(&e))
            }
        };
        // Before any member hears back, so every request that follows a
        // member's answer sees the count moved (a failed batch counts too).
        pipe.commits.fetch_add(1, Ordering::SeqCst);
        end(batch, outcome);
    }

    /// Rolls the whole batch back and reports `why` to every member.
    pub async fn abort(&mut self, why: &sqlx::Error, pipe: &Pipe) {
        crate::db::stats::WRITES.failed();
        tracing::error!(error = %why, "a write batch was rolled back");
        self.in_savepoint = false;
        self.spare = false;
        pipe.stale();
        self.taken_at = None;
        if let Some(mut conn) = self.conn.take()
            && sqlx::query("ROLLBACK").execute(&mut *conn).await.is_err()
        {
            conn.close_on_drop();
        }
        if let Some(batch) = self.batch.take() {
            end(batch, Err(failure(why)));
        }
    }
}

/// Tells every member of `batch` its outcome.
fn end(batch: Batch, outcome: Result<(), Failure>) {
    for member in batch.waiting {
        let _ = member.send(Reply::Done(outcome.clone()));
    }
    batch.done.send_replace(Some(outcome));
}

/// Whether the batch's transaction is still open, with no savepoint in it
/// (a member's savepoint was undone and none was found): `BEGIN` fails
/// inside a transaction. Otherwise SQLite rolled the transaction back (a
/// full disk, an I/O error), and the `BEGIN` that succeeded is undone.
async fn released_in_batch(conn: &mut AnyConnection) -> bool {
    match conn.execute("BEGIN").await {
        Err(_) => true,
        Ok(_) => {
            let _ = conn.execute("ROLLBACK").await;
            false
        }
    }
}

/// What every member of a failed batch is told: a full or read-only disk,
/// and a lock held elsewhere too long, keep their meaning as I/O error kinds.
pub(crate) fn failure(err: &sqlx::Error) -> Failure {
    let kind = match err {
        sqlx::Error::Io(io) => io.kind(),
        _ if crate::db::storage_unavailable(err) => std::io::ErrorKind::StorageFull,
        _ if crate::db::interrupted(err) => std::io::ErrorKind::ResourceBusy,
        _ => std::io::ErrorKind::Other,
    };
    (kind, Arc::from(err.to_string()))
}

/// The error a member of a failed batch gets.
pub(crate) fn failed((kind, why): &Failure) -> sqlx::Error {
    sqlx::Error::Io(std::io::Error::new(
        *kind,
        format!("group commit failed: {why}"),
    ))
}
