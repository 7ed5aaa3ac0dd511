//! What the writer did since the start, for `/metrics` and `/readyz`:
//! group commits, their sizes and how long each `COMMIT` (the fsync) took,
//! and whether the last write reached the disk.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the commit duration buckets, in seconds.
pub const COMMIT_BUCKETS: [f64; 10] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2.0,
];

/// The counters; one set per process.
#[derive(Debug)]
pub struct WriteStats {
    pub commits: AtomicU64,
    /// Transactions committed by those commits (their sizes summed).
    pub members: AtomicU64,
    /// Commits and batches that failed (full or read-only disk, I/O error).
    pub failures: AtomicU64,
    /// Whether the last commit or batch reached the disk.
    pub last_ok: AtomicBool,
    /// SQLite: scripts the writer's task ran for their members
    /// (`pipe.rs`), the hops they took, and those superseded (not run: one
    /// built before them failed).
    pub scripts: AtomicU64,
    pub script_hops: AtomicU64,
    pub superseded: AtomicU64,
    /// Commit durations: count per bucket, and the sum of seconds.
    durations: Mutex<([u64; COMMIT_BUCKETS.len()], f64)>,
}

/// The process's write counters.
pub static WRITES: WriteStats = WriteStats {
    commits: AtomicU64::new(0),
    members: AtomicU64::new(0),
    failures: AtomicU64::new(0),
    last_ok: AtomicBool::new(true),
    scripts: AtomicU64::new(0),
    script_hops: AtomicU64::new(0),
    superseded: AtomicU64::new(0),
    durations: Mutex::new(([0; COMMIT_BUCKETS.len()], 0.0)),
};

impl WriteStats {
    /// A commit of `members` transactions that took `took`.
    pub fn committed(&self, members: usize, took: Duration) {
        self.commits.fetch_add(1, Ordering::Relaxed);
        self.members.fetch_add(members as u64, Ordering::Relaxed);
        self.last_ok.store(true, Ordering::Relaxed);
        let seconds = took.as_secs_f64();
        let mut durations = self.durations.lock().unwrap_or_else(|p| p.into_inner());
        for (count, bound) in durations.0.iter_mut().zip(COMMIT_BUCKETS) {
            if seconds <= bound {
                *count += 1;
            }
        }
        durations.1 += seconds;
    }

    /// A commit or a batch that did not reach the disk.
    pub fn failed(&self) {
        self.failures.fetch_add(1, Ordering::Relaxed);
        self.last_ok.store(false, Ordering::Relaxed);
    }

    /// Cumulative bucket counts and the sum of seconds.
    pub fn durations(&self) -> ([u64; COMMIT_BUCKETS.len()], f64) {
        *self.durations.lock().unwrap_or_else(|p| p.into_inner())
    }
}
