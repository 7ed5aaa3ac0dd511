//! PostgreSQL's grouped writes: work of the same shape from several
//! requests, each in its own session, written by one transaction with one
//! statement for all of them, so the server sets up, plans and commits once
//! for the group instead of once per request (`docs/performance.md`,
//! "PostgreSQL creations in groups").
//!
//! A request hands its work (a JSON row) to the daemon's group runners and
//! waits. A runner takes every row that waits, at most one per session and
//! [`MOST`] in all, and runs:
//!
//! 1. `BEGIN`;
//! 2. one statement that takes the deployment's write lock shared, then
//!    every member's session lock in the order of their keys (as every
//!    transaction takes its locks, so no two wait for each other in a
//!    circle), then the work's [`Grouped::last_lock`] if it has one (taken
//!    last, so a group holding it never waits for a session);
//! 3. the group's statement, given every row as one JSON array (`$1`,
//!    each row with its index `i`), which writes the members it finds
//!    right and returns their `i`, each with the row ([`Seen`]) it read
//!    under the locks for what follows: a member it leaves out was refused
//!    nothing yet, and its request makes its work again alone;
//! 4. the work's [`Grouped::before_commit`] with the rows written and
//!    what the statement read (the audit chain's rows after its head);
//! 5. `COMMIT`, then what follows the commit (telling the other daemons)
//!    once for the group, before any member is answered.
//!
//! Its statement begins after every lock is held, and READ COMMITTED
//! takes a snapshot per statement, so it sees what every earlier writer of
//! each member's session committed, as a transaction of that member alone
//! would; with one member per session, the members see nothing of each
//! other's but their shared statement.
//!
//! The group runs outside any request: a request that gives up waiting
//! does not undo its member. A group that fails before its commit was
//! undone whole, and each member is made again alone (where a lost
//! connection gives its own `503`); a failed commit is every member's
//! error, since whether it took effect is not known.

use std::collections::{BTreeSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Instant;

use futures_util::future::BoxFuture;
use serde_json::Value;
use sqlx::AnyConnection;
use tokio::sync::{Mutex, mpsc, oneshot};

use super::Pg;
use super::write::WRITE_LOCK;
use crate::db::Lock;

/// Most members in one group.
const MOST: usize = 64;

/// Groups that may run at once in one daemon: while one commits, the next
/// gathers what arrived meanwhile.
const RUNNERS: usize = 2;

/// A row `(id, hash)` that a group's statement read under the group's
/// locks, in the second and third columns of each row it returns (NULLs
/// for none): for creations, the audit chain's head, so that reading it
/// takes no round trip of its own while the sealer's lock is held.
pub type Seen = Option<(i64, Vec<u8>)>;

/// Written in the group's transaction after its statement, given the rows
/// it wrote and what it read.
pub type BeforeCommit =
    for<'c> fn(&'c mut AnyConnection, Vec<Value>, Seen) -> BoxFuture<'c, sqlx::Result<()>>;

/// One request's share of a group.
#[derive(Debug)]
pub struct Grouped {
    /// The group's statement; only work with the same statement shares a
    /// group. It returns `(i, id, hash)` per member written ([`Seen`]).
    pub sql: &'static str,
    /// The session the work writes to, locked for the group.
    pub session: String,
    /// The member's row in the statement's `$1`; its `i` is set here.
    pub row: Value,
    /// An advisory lock the group takes after its sessions', to its commit.
    pub last_lock: Option<i64>,
    /// Run before the commit with the rows written.
    pub before_commit: Option<BeforeCommit>,
}

struct Job {
    work: Grouped,
    reply: oneshot::Sender<sqlx::Result<bool>>,
}

/// The members waiting, and those left for a later group (a second of a
/// session, or another statement's).
struct Queue {
    arrived: mpsc::UnboundedReceiver<Job>,
    carried: VecDeque<Job>,
}

/// The daemon's group runners, started with the first member.
#[derive(Debug)]
pub(crate) struct Groups {
    send: mpsc::UnboundedSender<Job>,
    queue: Arc<Mutex<Queue>>,
    started: AtomicBool,
    /// Groups run and the members they carried, since the start.
    counts: [AtomicU64; 2],
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("carried", &self.carried.len())
            .finish_non_exhaustive()
    }
}

impl Groups {
    /// (groups run, members they carried) since the start.
    pub(crate) fn counts(&self) -> (u64, u64) {
        let [groups, members] = &self.counts;
        (
            groups.load(Ordering::Relaxed),
            members.load(Ordering::Relaxed),
        )
    }
}

impl Default for Groups {
    fn default() -> Self {
        let (send, arrived) = mpsc::unbounded_channel();
        Self {
            send,
            queue: Arc::new(Mutex::new(Queue {
                arrived,
                carried: VecDeque::new(),
            })),
            started: AtomicBool::new(false),
            counts: [AtomicU64::new(0), AtomicU64::new(0)],
        }
    }
}

/// Writes `work` with a group, once it committed: `Ok(true)` when the
/// group's statement wrote it, `Ok(false)` when it did not (its caller
/// makes it again alone).
pub(crate) async fn write(writer: &Arc<Pg>, work: Grouped) -> sqlx::Result<bool> {
    let groups = &writer.groups;
    if !groups.started.swap(true, Ordering::SeqCst) {
        for _ in 0..RUNNERS {
            tokio::spawn(run(groups.queue.clone(), Arc::downgrade(writer)));
        }
    }
    let (reply, answer) = oneshot::channel();
    if groups.send.send(Job { work, reply }).is_err() {
        return Err(sqlx::Error::PoolClosed);
    }
    answer.await.unwrap_or(Ok(false))
}

/// A runner: gathers a group, runs it, and again, until the daemon's
/// database is dropped.
async fn run(queue: Arc<Mutex<Queue>>, writer: Weak<Pg>) {
    loop {
        let Some(group) = queue.lock().await.gather().await else {
            return;
        };
        let Some(writer) = writer.upgrade() else {
            return;
        };
        write_group(writer, group).await;
    }
}

impl Queue {
    /// The next group: the first member waiting, with every other that
    /// fits, oldest first; `None` once nothing more can arrive.
    async fn gather(&mut self) -> Option<Vec<Job>> {
        let first = match self.carried.pop_front() {
            Some(job) => job,
            None => self.arrived.recv().await?,
        };
        let mut sessions = BTreeSet::from([first.work.session.clone()]);
        let sql = first.work.sql;
        let mut group = vec![first];
        let mut kept = VecDeque::new();
        let mut fits = |job: Job, group: &mut Vec<Job>| {
            if group.len() < MOST
                && job.work.sql == sql
                && sessions.insert(job.work.session.clone())
            {
                group.push(job);
            } else {
                kept.push_back(job);
            }
        };
        while let Some(job) = self.carried.pop_front() {
            fits(job, &mut group);
        }
        while group.len() < MOST
            && let Ok(job) = self.arrived.try_recv()
        {
            fits(job, &mut group);
        }
        self.carried = kept;
        Some(group)
    }
}

/// Runs one group and answers its members (after the other daemons were
/// told of its sessions' changes, on a task of its own, so that the runner
/// gathers the next group meanwhile).
async fn write_group(writer: Arc<Pg>, mut group: Vec<Job>) {
    let started = Instant::now();
    let sql = group[0].work.sql;
    let mut locks: Vec<(i32, i32)> = group
        .iter()
        .map(|job| Lock::Session(&job.work.session).keys())
        .collect();
    locks.sort_unstable();
    locks.dedup();
    let rows: Vec<Value> = group
        .iter_mut()
        .enumerate()
        .map(|(i, job)| {
            let mut row = std::mem::take(&mut job.work.row);
            row["i"] = Value::from(i);
            row
        })
        .collect();
    let last = (group[0].work.last_lock, group[0].work.before_commit);
    let written = match write_rows(&writer, &locks, last, sql, rows).await {
        Ok(tx_written) => tx_written,
        Err(err) => {
            tracing::debug!(error = %err, members = group.len(), "a group failed before its commit; its members are made again alone");
            for job in group {
                let _ = job.reply.send(Ok(false));
            }
            return;
        }
    };
    let (tx, written) = written;
    let done = tx.commit().await;
    let [groups, members] = &writer.groups.counts;
    groups.fetch_add(1, Ordering::Relaxed);
    members.fetch_add(group.len() as u64, Ordering::Relaxed);
    match &done {
        Ok(()) => crate::db::stats::WRITES.committed(written.len(), started.elapsed()),
        Err(_) => crate::db::stats::WRITES.failed(),
    }
    tokio::spawn(async move {
        if let Err(err) = done {
            for job in group {
                let _ = job.reply.send(Err(shared(&err)));
            }
            return;
        }
        let sessions: Vec<String> = group
            .iter()
            .enumerate()
            .filter(|(i, _)| written.contains(&(*i as i64)))
            .map(|(_, job)| job.work.session.clone())
            .collect();
        if !sessions.is_empty() {
            let follow_up = &writer.follow_up;
            follow_up.after_commit(&writer.pool, None, sessions).await;
        }
        for (i, job) in group.into_iter().enumerate() {
            let _ = job.reply.send(Ok(written.contains(&(i as i64))));
        }
    });
}

/// Steps 1 to 4: the transaction, its locks, the group's statement and
/// what comes before the commit; the members written, by index.
async fn write_rows(
    writer: &Pg,
    locks: &[(i32, i32)],
    (last_lock, before_commit): (Option<i64>, Option<BeforeCommit>),
    sql: &str,
    rows: Vec<Value>,
) -> sqlx::Result<(sqlx::Transaction<'static, sqlx::Any>, Vec<i64>)> {
    let mut tx = writer.pool.begin().await?;
    // A select list is evaluated left to right, and the subquery's locks in
    // the order of its rows: the write lock first, then the sessions', as
    // in every other transaction, then the last (none for a NULL: the lock
    // function is strict).
    sqlx::query(
        "SELECT 1 FROM (SELECT pg_advisory_xact_lock_shared($1), \
         (SELECT count(pg_advisory_xact_lock(CAST(k.e ->> 0 AS INTEGER), CAST(k.e ->> 1 AS INTEGER))) \
          FROM (SELECT e FROM json_array_elements(CAST($2 AS JSON)) WITH ORDINALITY AS t(e, o) \
                ORDER BY o) AS k), \
         pg_advisory_xact_lock(CAST($3 AS BIGINT))) AS locked",
    )
    .bind(WRITE_LOCK)
    .bind(serde_json::to_string(locks).expect("keys serialize"))
    .bind(last_lock)
    .execute(&mut *tx)
    .await?;
    let text = Value::Array(rows.clone()).to_string();
    let returned: Vec<(i64, Option<i64>, Option<Vec<u8>>)> =
        sqlx::query_as(sql).bind(text).fetch_all(&mut *tx).await?;
    let seen = returned
        .first()
        .and_then(|(_, id, hash)| id.zip(hash.clone()));
    let written: Vec<i64> = returned.into_iter().map(|(i, ..)| i).collect();
    if let Some(before_commit) = before_commit
        && !written.is_empty()
    {
        let rows = rows
            .into_iter()
            .enumerate()
            .filter(|(i, _)| written.contains(&(*i as i64)))
            .map(|(_, row)| row)
            .collect();
        before_commit(&mut tx, rows, seen).await?;
    }
    Ok((tx, written))
}

/// A failed commit's error for each member: of the same kind (a lost
/// connection stays a lost connection, a full disk a full disk), since
/// `sqlx::Error` cannot be cloned.
fn shared(err: &sqlx::Error) -> sqlx::Error {
    use std::io::{Error, ErrorKind};
    let kind = if crate::db::connection_lost(err) {
        ErrorKind::ConnectionAborted
    } else if crate::db::storage_unavailable(err) {
        ErrorKind::StorageFull
    } else if crate::db::interrupted(err) {
        ErrorKind::ResourceBusy
    } else {
        ErrorKind::Other
    };
    sqlx::Error::Io(Error::new(
        kind,
        format!("the group's commit failed: {err}"),
    ))
}
