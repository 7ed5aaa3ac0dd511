//! WAL checkpoints off the writer's path (SQLite).
//!
//! SQLite copies the WAL back into the database file (a checkpoint) from
//! the connection whose commit grew the WAL past `wal_autocheckpoint`
//! pages, right after that commit. On the single writer that copy (reads
//! of WAL frames, writes of pages, an fsync of the database file) ran
//! between two batches, while every request queued for the writer waited:
//! `perf record` of the writer's thread put 16% of its CPU there at c=64
//! (`docs/performance.md`, 2026-11-27).
//!
//! Here a task of the daemon's copies what the writer committed, with a
//! `PASSIVE` checkpoint on a read connection every [`EVERY`] while commits
//! arrive: it waits for no one and no one waits for it, and it runs on a
//! core the writer is not using. The writer's own checkpoint stays as a
//! bound ([`WRITER_PRAGMA`]): it finds most frames copied already, and it is
//! what lets the WAL start over from its beginning under endless load,
//! since SQLite restarts the WAL only at a write transaction's start that
//! finds every frame copied. The WAL file therefore stays under about
//! 10,000 pages plus one batch.
//!
//! Durability does not move: a commit is fsynced in the WAL before it is
//! acknowledged, whoever copies it later.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use sqlx::AnyPool;

/// How often the task checkpoints while commits arrive, unless
/// [`SETTING`] says otherwise.
pub const EVERY: Duration = Duration::from_millis(100);

/// The environment variable that sets the task's interval in
/// milliseconds; `0` turns the task off (the writer then checkpoints alone,
/// at [`WRITER_PRAGMA`]'s bound).
pub const SETTING: &str = "WIDGETD_CHECKPOINT_MS";

/// The task's interval: [`SETTING`] if set to a number, else [`EVERY`];
/// `None` when it is off.
fn every() -> Option<Duration> {
    match std::env::var(SETTING)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
    {
        Some(0) => None,
        Some(ms) => Some(Duration::from_millis(ms)),
        None => Some(EVERY),
    }
}

/// The writer's own `wal_autocheckpoint`: 10,000 pages, about 40 MiB of
/// 4 KiB pages (SQLite's default is 1,000). Set on every connection; only
/// a connection that commits (the writer, the CLI) checkpoints by it.
pub(super) const WRITER_PRAGMA: &str = "PRAGMA wal_autocheckpoint = 10000";

/// Checkpoints the tasks of this process have run, for `/metrics`.
static PASSES: AtomicU64 = AtomicU64::new(0);

/// How many checkpoints the tasks of this process have run.
pub fn passes() -> u64 {
    PASSES.load(Ordering::Relaxed)
}

/// The running task's switch ([`Checkpointer::stop`]) and its count.
#[derive(Debug, Default)]
pub(super) struct Checkpointer {
    stopped: Arc<AtomicBool>,
    passes: Arc<AtomicU64>,
}

impl Checkpointer {
    /// Starts the task on `read`, for the commits `commits` counts. It
    /// also ends by itself once the writer that counts them is gone.
    pub(super) fn start(read: AnyPool, commits: &Arc<AtomicU64>) -> Self {
        let this = Self::default();
        let Some(every) = every() else {
            return this;
        };
        let commits = Arc::downgrade(commits);
        tokio::spawn(run(
            read,
            every,
            commits,
            this.stopped.clone(),
            this.passes.clone(),
        ));
        this
    }

    /// How many checkpoints this task has run.
    #[cfg(test)]
    pub(super) fn passes(&self) -> u64 {
        self.passes.load(Ordering::Relaxed)
    }

    /// Ends the task before its pool closes: it starts no checkpoint after
    /// this (one already running returns its connection when done).
    pub(super) fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
    }
}

async fn run(
    read: AnyPool,
    every: Duration,
    commits: Weak<AtomicU64>,
    stopped: Arc<AtomicBool>,
    passes: Arc<AtomicU64>,
) {
    let mut copied = 0;
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(count) = commits.upgrade().map(|c| c.load(Ordering::SeqCst)) else {
            return;
        };
        if stopped.load(Ordering::SeqCst) {
            return;
        }
        // After a write that did not reach the disk (a full or read-only
        // disk), the WAL is left as it is until a write succeeds again: a
        // checkpoint would let the next write reuse the log's space, and
        // `/readyz`'s probe would pass on a disk that is still full.
        if count == copied || !super::stats::WRITES.last_ok.load(Ordering::Relaxed) {
            continue;
        }
        let Ok(mut conn) = read.acquire().await else {
            return;
        };
        if stopped.load(Ordering::SeqCst) {
            return;
        }
        // Tried again after the next commit, not at every tick: a full or
        // read-only disk is logged once, and the writer's own checkpoint
        // still bounds the WAL.
        copied = count;
        match sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
            .execute(&mut *conn)
            .await
        {
            Ok(_) => {
                passes.fetch_add(1, Ordering::Relaxed);
                PASSES.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => tracing::warn!(error = %e, "a WAL checkpoint failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::EVERY;
    use crate::testing::TestDb;

    #[tokio::test]
    async fn the_task_copies_what_the_writer_committed_and_idles_when_nothing_was() {
        let test = TestDb::new().await;
        let db = &test.db;
        let passes = || db.checkpointer.as_ref().expect("SQLite").passes();
        tokio::time::sleep(EVERY * 3).await;
        let idle = passes();
        tokio::time::sleep(EVERY * 3).await;
        assert_eq!(passes(), idle, "no commit, no checkpoint");

        // Far fewer pages than the writer's own bound: the writer copies
        // none of them back.
        for i in 0..20 {
            let mut tx = db.begin_write().await.unwrap();
            sqlx::query("UPDATE users SET name = $1")
                .bind(format!("name {i} {}", "x".repeat(3000)))
                .execute(&mut *tx)
                .await
                .unwrap();
            tx.commit().await.unwrap();
        }
        let deadline = std::time::Instant::now() + EVERY * 50;
        while passes() == idle {
            assert!(std::time::Instant::now() < deadline, "no checkpoint ran");
            tokio::time::sleep(EVERY / 4).await;
        }
        db.close().await;
        let closed = passes();
        tokio::time::sleep(EVERY * 3).await;
        assert_eq!(passes(), closed, "a closed database is left alone");
    }
}
