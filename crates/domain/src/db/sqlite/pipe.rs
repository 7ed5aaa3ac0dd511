//! Scripts left for the writer's task to run, several in one hop.
//!
//! A member of a SQLite batch that reads nothing (a creation on the guess,
//! `widgets/engine/store/guess.rs`) builds its writes as one script ([`Script`])
//! while it holds the writer, from the writer's memory (`memo.rs`), leaves
//! the script here and lets the next member build: it no longer waits for
//! its hop to sqlx's worker thread before the next member may start.
//! One task of the writer's own takes the scripts left meanwhile, in the
//! order they were built, and sends runs of identical statement lists
//! (1, 2, 4 or 8 of them, so each is one prepared statement list of sqlx's
//! cache) in one hop each, every script in a savepoint of its own. The
//! scripts' members hear back once the batch's `COMMIT` has run.
//!
//! A script is built from the memory as the scripts before it will leave
//! the database, so when one fails (its guard refuses the guess, a
//! constraint breaks) those after it were built on something untrue: they
//! are not run, and their members are told they were superseded, which
//! makes their creation again with its reads (`db::superseded`). The task
//! marks the memory [`Pipe::stale`], and the next member to hold the
//! writer forgets it; so does a script built under an older mark.
//!
//! The connection ([`Core`]) is with the task while it runs scripts; a
//! member that needs it (one that reads or writes statement by statement)
//! waits for it in [`Pipe::core`], which the task hands over once no
//! script is left, so the member sees every write built before its own.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use futures_util::{FutureExt, TryStreamExt};
use sqlx::any::AnyArguments;
use sqlx::{Arguments, Either, Executor};
use tokio::sync::{Notify, oneshot};

use super::batch::{Core, Failure, failure};
use super::writer::{MAX_MEMBERS, Writer};
use crate::db::stats::WRITES;

/// Most scripts sent in one hop.
const MAX_RUN: usize = 8;

/// What the writer's task and the members hand each other.
pub(crate) struct Pipe {
    inner: Mutex<Inner>,
    /// Moves whenever the writer's memory may be untrue (`memo.rs`).
    epoch: AtomicU64,
    /// Batches ended, counted after each `COMMIT` and before its members
    /// hear back (`changes.rs`).
    pub commits: Arc<AtomicU64>,
    kick: Notify,
}

struct Inner {
    slot: Slot,
    /// Scripts built and not yet run, in the order they were built.
    pending: VecDeque<Job>,
}

/// Where the connection is.
enum Slot {
    Here(Box<Core>),
    /// With the writer's task, or with the member holding the writer.
    Taken,
    /// With the task; the member holding the writer waits for it.
    Wanted(oneshot::Sender<Box<Core>>),
}

/// A script left to run: its statement list, its values, how many
/// statements the list has, and the memory's mark it was built under.
pub(crate) struct Job {
    pub sql: String,
    pub args: AnyArguments<'static>,
    pub statements: usize,
    pub epoch: u64,
    pub reply: oneshot::Sender<Reply>,
}

/// What a script's member hears.
pub(crate) enum Reply {
    /// It ran, and its batch ended so.
    Done(Result<(), Failure>),
    /// It failed, and nothing of it stands.
    Failed(sqlx::Error),
    /// A script before it failed: it did not run.
    Superseded,
}

impl Job {
    fn answer(self, reply: Reply) {
        if matches!(reply, Reply::Superseded) {
            WRITES.superseded.fetch_add(1, Ordering::Relaxed);
        }
        let _ = self.reply.send(reply);
    }
}

impl Pipe {
    pub fn new(commits: Arc<AtomicU64>) -> Self {
        Self {
            inner: Mutex::new(Inner {
                slot: Slot::Here(Box::default()),
                pending: VecDeque::new(),
            }),
            epoch: AtomicU64::new(0),
            commits,
            kick: Notify::new(),
        }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The memory's mark: scripts built under an older one do not run.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// The writer's memory may be untrue: the next member forgets it.
    pub fn stale(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// Wakes the writer's task.
    pub fn kick(&self) {
        self.kick.notify_one();
    }

    /// Whether the writer's task may have anything to do once nobody holds
    /// the writer: scripts to run, a batch left open to commit, or the
    /// connection still with the task (which, woken, looks again once it
    /// is done, so that a batch it left open on a busy writer commits).
    pub fn has_work(&self) -> bool {
        let inner = self.inner();
        !inner.pending.is_empty()
            || !matches!(&inner.slot, Slot::Here(core) if core.batch.is_none() && !core.holds_idle())
    }

    /// The connection, for the member holding the writer: at once, or once
    /// the writer's task has run every script left (none can be added
    /// meanwhile: adding one takes the writer). Taken at once, it may come
    /// with scripts left that the task has not started yet: then the
    /// second value is true, and the member runs them first ([`drain`]),
    /// so that its own work follows theirs.
    pub async fn core(&self) -> sqlx::Result<(Box<Core>, bool)> {
        let waiting = {
            let mut inner = self.inner();
            let left = !inner.pending.is_empty();
            match std::mem::replace(&mut inner.slot, Slot::Taken) {
                Slot::Here(core) => return Ok((core, left)),
                Slot::Taken => {
                    let (tx, rx) = oneshot::channel();
                    inner.slot = Slot::Wanted(tx);
                    rx
                }
                Slot::Wanted(_) => unreachable!("only the member holding the writer waits"),
            }
        };
        let core = waiting
            .await
            .map_err(|_| sqlx::Error::Io(std::io::Error::other("the writer's task ended")))?;
        Ok((core, false))
    }

    /// The member holding the writer is done with the connection; with
    /// nobody about to use it (`!busy`) and no batch open, the pool gets
    /// its connection back.
    pub fn put_back(&self, mut core: Box<Core>, busy: bool) {
        let idle = (!busy).then(|| core.release()).flatten();
        self.inner().slot = Slot::Here(core);
        drop(idle);
    }

    /// Puts `core` where the connection is expected, after the task lost
    /// the one it had.
    fn restore(&self, core: Box<Core>) {
        let mut inner = self.inner();
        match std::mem::replace(&mut inner.slot, Slot::Taken) {
            Slot::Wanted(member) => {
                if let Err(core) = member.send(core) {
                    inner.slot = Slot::Here(core);
                }
            }
            _ => inner.slot = Slot::Here(core),
        }
    }

    /// Leaves `job` to be run; whether the task must be woken for it.
    pub(crate) fn push(&self, job: Job) -> bool {
        let mut inner = self.inner();
        inner.pending.push_back(job);
        matches!(inner.slot, Slot::Here(_))
    }

    fn take_idle(&self) -> Option<Box<Core>> {
        let mut inner = self.inner();
        match std::mem::replace(&mut inner.slot, Slot::Taken) {
            Slot::Here(core) => Some(core),
            other => {
                inner.slot = other;
                None
            }
        }
    }

    fn take_jobs(&self, room: usize) -> VecDeque<Job> {
        let mut inner = self.inner();
        let n = room.min(inner.pending.len());
        inner.pending.drain(..n).collect()
    }

    /// Hands the connection to the member waiting for it, or leaves it
    /// here; back to the task when scripts were left meanwhile.
    fn give_back(&self, mut core: Box<Core>) -> Result<(), Box<Core>> {
        let mut inner = self.inner();
        if !inner.pending.is_empty() {
            return Err(core);
        }
        let mut idle = None;
        match std::mem::replace(&mut inner.slot, Slot::Taken) {
            Slot::Wanted(member) => {
                if let Err(mut core) = member.send(core) {
                    // It gave up waiting.
                    idle = core.release();
                    inner.slot = Slot::Here(core);
                }
            }
            _ => {
                // Nobody is about to write: the pool gets its connection back.
                idle = core.release();
                inner.slot = Slot::Here(core);
            }
        }
        drop(inner);
        drop(idle);
        Ok(())
    }
}

/// The writer's task: runs the scripts left for it, and commits the batch
/// when nobody holds or waits for the writer, or when it is full.
pub(crate) async fn run(pipe: Arc<Pipe>, weak: Weak<Writer>) {
    loop {
        pipe.kick.notified().await;
        let Some(writer) = weak.upgrade() else {
            return;
        };
        let Some(core) = pipe.take_idle() else {
            continue;
        };
        let served = AssertUnwindSafe(serve(&writer, core)).catch_unwind().await;
        if served.is_err() {
            // A bug: the batch under way is lost (its members hear that it
            // ended unfinished; its connection's transaction is rolled back
            // as the next batch begins), and writing goes on.
            tracing::error!("the SQLite writer's task panicked; its batch is lost");
            pipe.stale();
            pipe.restore(Box::default());
            pipe.kick();
        }
    }
}

/// Runs what was left, commits when nobody is left, and hands the
/// connection on once no script waits.
async fn serve(writer: &Writer, mut core: Box<Core>) {
    let pipe = &writer.pipe;
    loop {
        drain(writer, &mut core).await;
        if core.batch.is_some() && writer.idle() {
            core.commit(pipe).await;
        }
        match pipe.give_back(core) {
            Ok(()) => return,
            Err(back) => core = back,
        }
    }
}

/// Runs every script left, for the member that took the connection before
/// the writer's task did ([`Pipe::core`]).
pub(crate) async fn drain(writer: &Writer, core: &mut Core) {
    let pipe = &writer.pipe;
    loop {
        let members = core.batch.as_ref().map_or(0, |b| b.members);
        let jobs = pipe.take_jobs(MAX_MEMBERS.saturating_sub(members).max(1));
        if jobs.is_empty() {
            return;
        }
        run_jobs(writer, pipe, core, jobs).await;
        if core
            .batch
            .as_ref()
            .is_some_and(|b| b.members >= MAX_MEMBERS)
        {
            core.commit(pipe).await;
        }
    }
}

/// Runs `jobs` in the open batch (opening one if none is), in runs of
/// identical statement lists, one hop each.
async fn run_jobs(writer: &Writer, pipe: &Pipe, core: &mut Core, jobs: VecDeque<Job>) {
    let mut jobs = live(pipe, jobs);
    if jobs.is_empty() {
        return;
    }
    if let Err(e) = ready(writer, pipe, core).await {
        let why = failure(&e);
        for job in jobs {
            job.answer(Reply::Done(Err(why.clone())));
        }
        return;
    }
    // Opening the batch may have found the memory untrue.
    jobs = live(pipe, jobs);
    while !jobs.is_empty() {
        let same = jobs
            .iter()
            .take(MAX_RUN)
            .take_while(|job| job.sql == jobs[0].sql)
            .count();
        // 1, 2, 4 or 8: each a statement list sqlx prepares once.
        let run: Vec<Job> = jobs.drain(..prev_power_of_two(same)).collect();
        if !run_hop(pipe, core, run).await {
            for job in jobs {
                job.answer(Reply::Superseded);
            }
            return;
        }
    }
}

/// The jobs built under the memory's current mark; the others hear they
/// were superseded.
fn live(pipe: &Pipe, jobs: VecDeque<Job>) -> VecDeque<Job> {
    let epoch = pipe.epoch();
    jobs.into_iter()
        .filter_map(|job| match job.epoch == epoch {
            true => Some(job),
            false => {
                job.answer(Reply::Superseded);
                None
            }
        })
        .collect()
}

/// An open batch with no member's savepoint in it: opened, or the
/// savepoint a member left open (or opened for the next one) ended.
async fn ready(writer: &Writer, pipe: &Pipe, core: &mut Core) -> sqlx::Result<()> {
    if core.batch.is_none() {
        return core.open(&writer.pool, false, pipe).await;
    }
    let ended = if core.in_savepoint {
        // A member dropped where its undo could not be scheduled; what it
        // changed in the memory is not known here.
        pipe.stale();
        core.undo_member(false).await
    } else if core.spare {
        core.spare = false;
        core.conn().execute("RELEASE member").await.map(drop)
    } else {
        Ok(())
    };
    if let Err(e) = ended {
        core.abort(&e, pipe).await;
        return Err(e);
    }
    Ok(())
}

/// Sends `run` (scripts with one statement list) in one hop, each in a
/// savepoint of its own; false when one failed, which ends the hop there.
async fn run_hop(pipe: &Pipe, core: &mut Core, mut run: Vec<Job>) -> bool {
    let each = run[0].statements + 2;
    let mut sql = String::with_capacity((run[0].sql.len() + 48) * run.len());
    let mut args = AnyArguments::default();
    for job in &mut run {
        let offset = args.len();
        if !sql.is_empty() {
            sql.push_str("; ");
        }
        sql.push_str("SAVEPOINT member; ");
        sql.push_str(&crate::db::script::renumber(&job.sql, offset).0);
        sql.push_str("; RELEASE member");
        append(&mut args, std::mem::take(&mut job.args));
    }
    WRITES.script_hops.fetch_add(1, Ordering::Relaxed);
    let mut done = 0;
    let ran = {
        let mut results = core.conn().fetch_many(sqlx::query_with(&sql, args));
        loop {
            match results.try_next().await {
                Ok(Some(Either::Left(_))) => done += 1,
                Ok(Some(Either::Right(_))) => {}
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
        }
    };
    let mut run = run.into_iter();
    let batch = core.batch.as_mut().expect("scripts run in an open batch");
    let ran_whole = match &ran {
        Ok(()) => usize::MAX,
        Err(_) => done / each,
    };
    for job in run.by_ref().take(ran_whole) {
        WRITES.scripts.fetch_add(1, Ordering::Relaxed);
        batch.members += 1;
        batch.waiting.push(job.reply);
    }
    let Err(e) = ran else {
        return true;
    };
    pipe.stale();
    let failing = run.next().expect("the failing script is in the hop");
    for job in run {
        job.answer(Reply::Superseded);
    }
    if done % each == 0 {
        // Its savepoint did not open: nothing of it ran.
        core.abort(&e, pipe).await;
    } else {
        core.in_savepoint = true;
        if let Err(undo) = core.undo_member(false).await {
            // SQLite rolled the whole transaction back (a full disk, an
            // I/O error): nothing in the batch stands.
            core.abort(&undo, pipe).await;
        }
    }
    failing.answer(Reply::Failed(e));
    false
}

/// The largest power of two not above `n` (at least 1).
fn prev_power_of_two(n: usize) -> usize {
    match n {
        0 | 1 => 1,
        n => 1 << (usize::BITS - 1 - n.leading_zeros()),
    }
}

/// Appends `from`'s values to `into`'s. sqlx's `AnyArguments` exposes its
/// values only through this (hidden) field; the version is pinned.
fn append(into: &mut AnyArguments<'static>, from: AnyArguments<'static>) {
    into.values.0.extend(from.values.0);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the task does after a panic lost the connection's slot: a
    /// fresh one goes to the member waiting for it, else stays for the
    /// next batch, so writing goes on.
    #[tokio::test]
    async fn a_slot_lost_with_the_task_is_put_back() {
        let pipe = Pipe::new(Arc::default());
        drop(pipe.take_idle().expect("a new pipe holds its slot"));
        assert!(pipe.take_idle().is_none(), "the slot is with the task");
        pipe.restore(Box::default());
        drop(pipe.take_idle().expect("restored for the next batch"));

        let wanted = pipe.core();
        tokio::pin!(wanted);
        assert!(futures_util::poll!(&mut wanted).is_pending());
        pipe.restore(Box::default());
        let (core, left) = wanted.await.expect("the waiting member gets the slot");
        assert!(core.batch.is_none() && !left);
        pipe.put_back(core, false);

        // A member that gave up waiting: the slot stays for the next one.
        drop(pipe.take_idle().expect("put back"));
        {
            let gave_up = pipe.core();
            tokio::pin!(gave_up);
            assert!(futures_util::poll!(&mut gave_up).is_pending());
        }
        pipe.restore(Box::default());
        assert!(pipe.take_idle().is_some(), "kept for the next batch");
    }

    #[test]
    fn runs_are_powers_of_two() {
        let sizes: Vec<usize> = (0..=9).map(prev_power_of_two).collect();
        assert_eq!(sizes, [1, 1, 2, 2, 4, 4, 4, 4, 8, 8]);
    }
}
