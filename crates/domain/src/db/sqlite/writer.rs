//! Group commit: many write transactions, one SQLite transaction, one fsync.
//!
//! Write transactions take turns at the writer, first come, first served
//! (a fair lock around the writer's memory, `memo.rs`). The first to need
//! the connection opens a batch with `BEGIN IMMEDIATE`; every transaction
//! runs inside its own `SAVEPOINT`, whole transactions back to back. The
//! batch's outer `COMMIT` (the fsync at `synchronous=FULL`) is issued by
//! the queue, not a timer: when nobody else holds or waits for the writer
//! (so an idle daemon commits at once), or when the batch is full
//! ([`MAX_MEMBERS`], so nobody waits on an endless batch). Each member
//! hears back only after that outer `COMMIT`: success means durable, and a
//! failed `COMMIT` is reported to every member of the batch.
//!
//! A member is one of two kinds. One that reads or writes statement by
//! statement takes the connection ([`Core`]) for its turn ([`Member`]).
//! One whose writes are one script built from the writer's memory alone
//! (a creation on the guess) leaves the script to the writer's task and
//! ends its turn at once (`pipe.rs`): the task sends several members'
//! scripts in one hop to sqlx's worker thread while the next members
//! build theirs.
//!
//! Each hop to SQLite's worker thread costs more CPU than most statements
//! it carries, so a member that takes the connection spends as few as it
//! can: a batch opens with one (`BEGIN IMMEDIATE; SAVEPOINT member;
//! PRAGMA data_version`), a member that hands on releases its savepoint
//! and opens the next one in one (or in the hop of its last write,
//! `db::Script::commit`), and the last member's `COMMIT` releases its
//! savepoint with the batch.
//!
//! On PostgreSQL there is no batch: each write transaction is a plain
//! transaction that takes the deployment's write lock shared
//! (`db/postgres/write.rs`), and PostgreSQL groups the commits of
//! concurrent transactions itself.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use sqlx::{AnyConnection, AnyPool, Executor};
use tokio::sync::{Mutex, OwnedMutexGuard, watch};

use super::batch::{Core, Outcome, failed};
pub use super::memo::Memo;
use super::pipe::Pipe;

/// A batch this large commits at once, however many are waiting.
pub(crate) const MAX_MEMBERS: usize = 64;

/// The single writer.
pub(crate) struct Writer {
    pub(crate) pool: AnyPool,
    state: Arc<Mutex<State>>,
    /// Tasks waiting for their turn; zero means nobody would join the batch.
    queued: AtomicUsize,
    /// A member's turn is under way.
    held: AtomicBool,
    pub(crate) pipe: Arc<Pipe>,
    /// The writer's task runs (`pipe.rs`); started with the first script.
    started: AtomicBool,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("queued", &self.queued.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// What the member whose turn it is holds: the writer's memory, and the
/// mark (`Pipe::epoch`) it is true under.
pub(crate) struct State {
    memo: Memo,
    epoch: u64,
}

impl Writer {
    pub(crate) fn new(pool: AnyPool, commits: Arc<std::sync::atomic::AtomicU64>) -> Self {
        let pipe = Arc::new(Pipe::new(commits));
        let state = State {
            memo: Memo::default(),
            epoch: pipe.epoch(),
        };
        Self {
            pool,
            state: Arc::new(Mutex::new(state)),
            queued: AtomicUsize::new(0),
            held: AtomicBool::new(false),
            pipe,
            started: AtomicBool::new(false),
        }
    }

    pub(crate) fn queued(&self) -> usize {
        self.queued.load(Ordering::SeqCst)
    }

    /// Nobody holds or waits for the writer: a batch may commit.
    pub(crate) fn idle(&self) -> bool {
        self.queued() == 0 && !self.held.load(Ordering::SeqCst)
    }

    /// Starts the writer's task, once.
    pub(crate) fn start(self: &Arc<Self>) {
        if self.started.load(Ordering::SeqCst) {
            return;
        }
        // Outside a runtime (a member dropped at shutdown) there is nothing
        // to start it on; the next member will.
        if let Ok(runtime) = tokio::runtime::Handle::try_current()
            && !self.started.swap(true, Ordering::SeqCst)
        {
            runtime.spawn(super::pipe::run(self.pipe.clone(), Arc::downgrade(self)));
        }
    }

    /// Waits for this task's turn at the writer.
    pub(crate) async fn turn(self: &Arc<Self>) -> Turn {
        self.queued.fetch_add(1, Ordering::SeqCst);
        let counted = Dequeue(self);
        let guard = self.state.clone().lock_owned().await;
        self.held.store(true, Ordering::SeqCst);
        drop(counted);
        let mut turn = Turn {
            guard: Some(guard),
            writer: self.clone(),
        };
        turn.sync();
        turn.memo().new_turn();
        turn
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // The task ends once it finds the writer gone.
        self.pipe.kick();
    }
}

/// Takes a task off the waiting count when it gets its turn or gives up;
/// the last to give up with nobody holding the writer wakes its task,
/// which may have a batch to commit.
struct Dequeue<'a>(&'a Arc<Writer>);

impl Drop for Dequeue<'_> {
    fn drop(&mut self) {
        let writer = self.0;
        if writer.queued.fetch_sub(1, Ordering::SeqCst) == 1
            && !writer.held.load(Ordering::SeqCst)
            && writer.pipe.has_work()
        {
            writer.start();
            writer.pipe.kick();
        }
    }
}

/// A member's turn at the writer.
pub(crate) struct Turn {
    guard: Option<OwnedMutexGuard<State>>,
    writer: Arc<Writer>,
}

impl Turn {
    fn state(&mut self) -> &mut State {
        self.guard.as_mut().expect("a turn holds the writer")
    }

    pub fn memo(&mut self) -> &mut Memo {
        &mut self.state().memo
    }

    /// The mark the memory is true under.
    pub fn epoch(&mut self) -> u64 {
        self.state().epoch
    }

    /// Forgets the memory if it may have become untrue; whether it did.
    fn sync(&mut self) -> bool {
        let now = self.writer.pipe.epoch();
        let state = self.state();
        if state.epoch == now {
            return false;
        }
        state.memo.forget();
        state.epoch = now;
        true
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        // A member that gave up: what it changed in the memory is
        // forgotten (nothing, for one that kept or undid its work).
        if let Some(state) = self.guard.as_mut() {
            state.memo.undo_member();
        }
        self.writer.held.store(false, Ordering::SeqCst);
        drop(self.guard.take());
        // The last member out wakes the task, which commits the batch.
        if self.writer.queued() == 0 && self.writer.pipe.has_work() {
            self.writer.start();
            self.writer.pipe.kick();
        }
    }
}

/// A member's turn with the connection: the connection goes back before
/// the turn ends, so the next member finds it.
struct Seat {
    core: Option<Box<Core>>,
    turn: Option<Turn>,
}

impl Seat {
    fn core(&mut self) -> &mut Core {
        self.core.as_mut().expect("a seat holds the connection")
    }

    fn parts(&mut self) -> (&mut Core, &mut Turn) {
        (
            self.core.as_mut().expect("a seat holds the connection"),
            self.turn.as_mut().expect("a seat holds the writer"),
        )
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        if let (Some(core), Some(turn)) = (self.core.take(), self.turn.as_ref()) {
            let busy = turn.writer.queued() > 0;
            turn.writer.pipe.put_back(core, busy);
        }
        drop(self.turn.take());
    }
}

/// A member of a SQLite batch that holds the connection for its turn.
pub(crate) struct Member {
    writer: Arc<Writer>,
    seat: Option<Seat>,
    done: watch::Receiver<Outcome>,
    /// Its last write ended its savepoint ([`RELEASE`]): nothing more is
    /// written, and its commit needs no hop of its own.
    released: bool,
}

/// What a member's last write may carry to end its savepoint and open the
/// next member's in the same hop ([`Member::released`]). Should the write
/// fail or be cancelled partway, the member's undo finds either its own
/// savepoint (and undoes its writes) or, past the release, the next one or
/// none in the still open batch (and the writes stand, as a commit whose
/// answer was lost); one that finds the batch rolled back by SQLite (a
/// full disk) rolls the batch back.
pub(crate) const RELEASE: &str = "RELEASE member; SAVEPOINT member";

impl Member {
    /// Whether others wait for the writer, so that this member will likely
    /// hand the batch on rather than commit it (which ends its savepoint
    /// with the `COMMIT`, no [`RELEASE`] needed).
    pub(crate) fn followed(&self) -> bool {
        self.writer.queued() > 0
    }

    /// The member's last write carried [`RELEASE`] and succeeded.
    pub(crate) fn released(&mut self) {
        self.released = true;
    }

    fn seat(&mut self) -> &mut Seat {
        self.seat.as_mut().expect("a live WriteTx holds the writer")
    }

    pub(crate) async fn commit(mut self) -> sqlx::Result<()> {
        let mut seat = self.seat.take().expect("a live WriteTx holds the writer");
        let mut done = self.done.clone();
        if self.released && !closes(&self.writer, seat.core()) {
            // Nothing to send to SQLite: handed on here, without a task
            // between this member and the next one.
            let (core, turn) = seat.parts();
            hand_on(core, turn);
            drop(seat);
        } else {
            let ended = if self.released {
                Ended::Released
            } else {
                Ended::Keep
            };
            // Spawned: a caller cancelled halfway must not leave the batch open.
            tokio::spawn(leave(self.writer.clone(), seat, ended))
                .await
                .map_err(|e| sqlx::Error::Io(std::io::Error::other(e)))??;
        }
        let outcome = done.wait_for(Option::is_some).await.map_err(|_| {
            sqlx::Error::Io(std::io::Error::other("the write batch ended unfinished"))
        })?;
        match outcome.as_ref().expect("waited for an outcome") {
            Ok(()) => Ok(()),
            Err(why) => Err(failed(why)),
        }
    }

    pub(crate) async fn rollback(mut self) -> sqlx::Result<()> {
        let seat = self.seat.take().expect("a live WriteTx holds the writer");
        tokio::spawn(leave(self.writer.clone(), seat, Ended::Undo))
            .await
            .map_err(|e| sqlx::Error::Io(std::io::Error::other(e)))?
    }

    /// The batch's connection, as [`Member::conn`] reads it.
    pub(crate) fn conn_ref(&self) -> &AnyConnection {
        let seat = self.seat.as_ref().expect("a live WriteTx holds the writer");
        let core = seat.core.as_ref().expect("a seat holds the connection");
        core.conn
            .as_ref()
            .expect("an open batch holds the connection")
    }

    /// The writer's memory of the rows it owns (`memo.rs`).
    pub(crate) fn memo(&mut self) -> Option<&mut Memo> {
        let turn = self.seat.as_mut()?.turn.as_mut()?;
        Some(turn.memo())
    }

    /// The mark its memory is true under (`Pipe::epoch`).
    pub(crate) fn epoch(&mut self) -> u64 {
        self.seat()
            .turn
            .as_mut()
            .expect("a seat holds the writer")
            .epoch()
    }

    pub(crate) fn conn(&mut self) -> &mut AnyConnection {
        debug_assert!(!self.released, "a member writes nothing after its release");
        self.seat().core().conn()
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        let Some(seat) = self.seat.take() else {
            return;
        };
        // Without a runtime the savepoint stays marked open and the next
        // member undoes it before starting its own (the turn's end forgets
        // what this member changed in the memory).
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(leave(self.writer.clone(), seat, Ended::Undo));
        }
    }
}

/// Joins (or opens) the current batch with a fresh savepoint.
pub(crate) async fn join(writer: Arc<Writer>) -> sqlx::Result<Member> {
    let turn = writer.turn().await;
    seated(writer, turn).await
}

/// A member holding the writer takes the connection, once every script
/// left before it has run, and a savepoint in the batch.
pub(crate) async fn seated(writer: Arc<Writer>, mut turn: Turn) -> sqlx::Result<Member> {
    let (core, left) = writer.pipe.core().await?;
    // A script left before this turn may have failed meanwhile.
    turn.sync();
    let seat = Seat {
        core: Some(core),
        turn: Some(turn),
    };
    let core = seat.core.as_ref().expect("just seated");
    if !left && core.spare && !core.in_savepoint && core.batch.is_some() {
        // The last member's write opened this one's savepoint: nothing to
        // send to SQLite, so nothing a cancelled caller could leave
        // half-done, and no task between the last member and this one.
        return Ok(admit(writer, seat));
    }
    // Spawned: if the caller is cancelled meanwhile, the finished member is
    // dropped by the task, which undoes its savepoint.
    tokio::spawn(enter(writer, seat, left))
        .await
        .map_err(|e| sqlx::Error::Io(std::io::Error::other(e)))?
}

/// Runs the scripts `left` before this member, then opens its savepoint
/// (and the batch, if none is open).
async fn enter(writer: Arc<Writer>, mut seat: Seat, left: bool) -> sqlx::Result<Member> {
    let (core, turn) = seat.parts();
    if left {
        super::pipe::drain(&writer, core).await;
        turn.sync();
    }
    if core.in_savepoint {
        // A member dropped where its undo could not be scheduled.
        if let Err(e) = core.undo_member(false).await {
            core.abort(&e, &writer.pipe).await;
        }
    }
    if core.batch.is_none() {
        core.open(&writer.pool, true, &writer.pipe).await?;
        // Another connection may have written since the last batch.
        turn.sync();
    } else if !core.spare
        && let Err(e) = core.conn().execute("SAVEPOINT member").await
    {
        core.abort(&e, &writer.pipe).await;
        return Err(e);
    }
    Ok(admit(writer, seat))
}

/// Makes the holder of the writer a member of the open batch, in the
/// savepoint opened for it.
fn admit(writer: Arc<Writer>, mut seat: Seat) -> Member {
    let core = seat.core();
    core.spare = false;
    core.in_savepoint = true;
    let batch = core.batch.as_mut().expect("a member joins an open batch");
    batch.members += 1;
    let done = batch.done.subscribe();
    Member {
        writer,
        seat: Some(seat),
        done,
        released: false,
    }
}

/// How a member leaves the batch.
#[derive(Clone, Copy, PartialEq)]
enum Ended {
    /// Its work stands: its savepoint is released.
    Keep,
    /// Its work stands, and its last write already released its savepoint
    /// and opened the next one ([`RELEASE`]).
    Released,
    /// Its work is undone.
    Undo,
}

/// Ends a member's savepoint (kept or undone), then commits the batch now
/// or leaves it to the next member, or to the writer's task once nobody
/// is left.
async fn leave(writer: Arc<Writer>, mut seat: Seat, ended: Ended) -> sqlx::Result<()> {
    let close = closes(&writer, seat.core());
    let (core, turn) = seat.parts();
    let pipe = &writer.pipe;
    let keep = ended != Ended::Undo;
    if keep && close {
        // COMMIT ends the member's savepoint (or the next one, opened by
        // its last write) with the whole batch.
        turn.memo().keep_member();
        core.commit(pipe).await;
        return Ok(());
    }
    if ended == Ended::Released {
        hand_on(core, turn);
        return Ok(());
    }
    let ended = if keep {
        let released = core.conn().execute(sqlx::raw_sql(RELEASE)).await.map(drop);
        core.in_savepoint = false;
        turn.memo().keep_member();
        core.spare = released.is_ok();
        released
    } else {
        turn.memo().undo_member();
        core.undo_member(!close).await
    };
    if let Err(e) = ended {
        // The savepoint is gone only when SQLite rolled back the whole
        // transaction (disk full, I/O error): nothing in the batch stands.
        core.abort(&e, pipe).await;
        return Err(e);
    }
    if close {
        core.commit(pipe).await;
    }
    Ok(())
}

/// Whether the member holding the writer should commit the batch as it
/// leaves: nobody waits to join it, or it is full.
fn closes(writer: &Writer, core: &Core) -> bool {
    let batch = core.batch.as_ref().expect("a savepoint lives in a batch");
    writer.queued() == 0 || batch.members >= MAX_MEMBERS
}

/// Hands the open batch on from a member whose last write released its
/// savepoint and opened the next one ([`RELEASE`]).
fn hand_on(core: &mut Core, turn: &mut Turn) {
    core.in_savepoint = false;
    core.spare = true;
    turn.memo().keep_member();
}
