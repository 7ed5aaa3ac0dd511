//! Group commit: many write transactions, one SQLite transaction, one fsync.
//!
//! The single write connection sits behind a fair (first come, first served)
//! lock. The first request to take it opens a batch with `BEGIN IMMEDIATE`;
//! every request runs inside its own `SAVEPOINT`, whole transactions back to
//! back. A request that commits releases its savepoint and hands the
//! connection on; the batch's outer `COMMIT` (the fsync at
//! `synchronous=FULL`) is issued by the queue, not a timer: when nobody else
//! is waiting for the connection (so an idle daemon commits at once), or
//! when the batch is full ([`MAX_MEMBERS`], so nobody waits on an endless
//! batch). Each member hears back only after that outer `COMMIT`: success
//! means durable, and a failed `COMMIT` is reported to every member of the
//! batch.
//!
//! Each hop to SQLite's worker thread costs more CPU than most statements
//! it carries, so the writer spends as few as it can: a batch opens with
//! one (`BEGIN IMMEDIATE; SAVEPOINT member; PRAGMA data_version`), a member
//! that hands on releases its savepoint and opens the next one in one (or
//! in the hop of its last write, `db::Script::commit`), and the last
//! member's `COMMIT` releases its savepoint with the batch. The
//! writer also keeps the rows only it writes in memory (`memo.rs`).
//!
//! On PostgreSQL there is no batch: each write transaction is a plain
//! transaction that takes the deployment's write lock shared
//! (`pg_write.rs`), and PostgreSQL groups the commits of concurrent
//! transactions itself.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyConnection, AnyPool, Executor, Row};
use tokio::sync::{Mutex, OwnedMutexGuard, watch};

pub use super::memo::Memo;

/// A batch this large commits at once, however many are waiting.
const MAX_MEMBERS: usize = 64;

/// Why a batch failed: the kind of the error (so a full disk still reads as
/// one to every member) and its text.
type Failure = (std::io::ErrorKind, Arc<str>);
/// How a batch ended: `None` while it is open.
type Outcome = Option<Result<(), Failure>>;

/// The single writer: the write pool's one connection while a batch is open.
pub(crate) struct Writer {
    pub(super) backend: super::Backend,
    pub(super) pool: AnyPool,
    /// PostgreSQL: the after-commit hooks' gate.
    pub(super) follow_up: super::pg_write::FollowUp,
    state: Arc<Mutex<State>>,
    /// Tasks waiting for the lock; zero means nobody would join the batch.
    queued: AtomicUsize,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("queued", &self.queued.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

struct State {
    /// Held from `BEGIN IMMEDIATE` to the batch's end, then back in the pool.
    conn: Option<PoolConnection<Any>>,
    batch: Option<Batch>,
    /// A member's savepoint is open (its guard is alive, or it was dropped
    /// where its undo could not be scheduled).
    in_savepoint: bool,
    /// The next member's savepoint is already open (opened in the same hop
    /// that released the last one).
    spare: bool,
    next_id: u64,
    memo: Memo,
    /// (connections opened, `data_version`) as the last batch began: when
    /// either moved, someone else may have changed what the memo holds.
    seen: Option<(u64, i64)>,
    /// Batches ended, counted after each `COMMIT` and before its members
    /// hear back (`changes.rs`).
    commits: Arc<AtomicU64>,
}

struct Batch {
    id: u64,
    members: usize,
    /// A task is already queued to commit this batch.
    finisher: bool,
    done: watch::Sender<Outcome>,
}

impl Writer {
    pub(crate) fn new(backend: super::Backend, pool: AnyPool, commits: Arc<AtomicU64>) -> Self {
        let state = State {
            conn: None,
            batch: None,
            in_savepoint: false,
            spare: false,
            next_id: 0,
            memo: Memo::default(),
            seen: None,
            commits,
        };
        Self {
            backend,
            pool,
            follow_up: super::pg_write::FollowUp::default(),
            state: Arc::new(Mutex::new(state)),
            queued: AtomicUsize::new(0),
        }
    }

    pub(crate) fn queued(&self) -> usize {
        self.queued.load(Ordering::SeqCst)
    }

    async fn lock(&self) -> OwnedMutexGuard<State> {
        self.queued.fetch_add(1, Ordering::SeqCst);
        let _counted = Dequeue(&self.queued);
        self.state.clone().lock_owned().await
    }
}

/// Takes a task off the waiting count when it gets the lock or gives up.
struct Dequeue<'a>(&'a AtomicUsize);

impl Drop for Dequeue<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A member of a SQLite batch.
pub(super) struct Member {
    writer: Arc<Writer>,
    guard: Option<OwnedMutexGuard<State>>,
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
pub(super) const RELEASE: &str = "RELEASE member; SAVEPOINT member";

impl Member {
    /// Whether others wait for the writer, so that this member will likely
    /// hand the batch on rather than commit it (which ends its savepoint
    /// with the `COMMIT`, no [`RELEASE`] needed).
    pub(super) fn followed(&self) -> bool {
        self.writer.queued() > 0
    }

    /// The member's last write carried [`RELEASE`] and succeeded.
    pub(super) fn released(&mut self) {
        self.released = true;
    }

    pub(super) async fn commit(mut self) -> sqlx::Result<()> {
        let guard = self.guard.take().expect("a live WriteTx holds the writer");
        let mut done = self.done.clone();
        if self.released && !closes(&self.writer, &guard) {
            // Nothing to send to SQLite: handed on here, without a task
            // between this member and the next one.
            let mut guard = guard;
            hand_on(&self.writer, &mut guard);
        } else {
            let ended = if self.released {
                Ended::Released
            } else {
                Ended::Keep
            };
            // Spawned: a caller cancelled halfway must not leave the batch open.
            tokio::spawn(leave(self.writer.clone(), guard, ended))
                .await
                .map_err(|e| sqlx::Error::Io(std::io::Error::other(e)))??;
        }
        let outcome = done.wait_for(Option::is_some).await.map_err(|_| {
            sqlx::Error::Io(std::io::Error::other("the write batch ended unfinished"))
        })?;
        match outcome.as_ref().expect("waited for an outcome") {
            Ok(()) => Ok(()),
            Err((kind, why)) => Err(sqlx::Error::Io(std::io::Error::new(
                *kind,
                format!("group commit failed: {why}"),
            ))),
        }
    }

    pub(super) async fn rollback(mut self) -> sqlx::Result<()> {
        let guard = self.guard.take().expect("a live WriteTx holds the writer");
        tokio::spawn(leave(self.writer.clone(), guard, Ended::Undo))
            .await
            .map_err(|e| sqlx::Error::Io(std::io::Error::other(e)))?
    }

    /// The batch's connection, as [`Member::conn`] reads it.
    pub(super) fn conn_ref(&self) -> &AnyConnection {
        let state = self
            .guard
            .as_ref()
            .expect("a live WriteTx holds the writer");
        state
            .conn
            .as_ref()
            .expect("an open batch holds the connection")
    }

    /// The writer's memory of the rows it owns (`memo.rs`).
    pub(super) fn memo(&mut self) -> Option<&mut Memo> {
        self.guard.as_mut().map(|state| &mut state.memo)
    }

    pub(super) fn conn(&mut self) -> &mut AnyConnection {
        debug_assert!(!self.released, "a member writes nothing after its release");
        let state = self
            .guard
            .as_mut()
            .expect("a live WriteTx holds the writer");
        state
            .conn
            .as_mut()
            .expect("an open batch holds the connection")
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        let Some(guard) = self.guard.take() else {
            return;
        };
        // Without a runtime the savepoint stays marked open and the next
        // member undoes it before starting its own.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(leave(self.writer.clone(), guard, Ended::Undo));
        }
    }
}

/// Joins (or opens) the current batch with a fresh savepoint.
pub(super) async fn join(writer: Arc<Writer>) -> sqlx::Result<Member> {
    let guard = writer.lock().await;
    let state = &*guard;
    if state.spare && !state.in_savepoint && state.batch.is_some() {
        // The last member's write opened this one's savepoint: nothing to
        // send to SQLite, so nothing a cancelled caller could leave
        // half-done, and no task between the last member and this one.
        return Ok(admit(writer, guard));
    }
    // Spawned: if the caller is cancelled meanwhile, the finished member is
    // dropped by the task, which undoes its savepoint.
    tokio::spawn(enter(writer, guard))
        .await
        .map_err(|e| sqlx::Error::Io(std::io::Error::other(e)))?
}

async fn enter(writer: Arc<Writer>, mut guard: OwnedMutexGuard<State>) -> sqlx::Result<Member> {
    let state = &mut *guard;
    if state.in_savepoint {
        // A member dropped where its undo could not be scheduled.
        if let Err(e) = undo_member(state, false).await {
            abort_batch(state, &e).await;
        }
    }
    if state.batch.is_none() {
        open_batch(&writer.pool, state).await?;
    } else if !state.spare {
        let conn = state
            .conn
            .as_mut()
            .expect("an open batch holds the connection");
        if let Err(e) = sqlx::query("SAVEPOINT member").execute(&mut **conn).await {
            abort_batch(state, &e).await;
            return Err(e);
        }
    }
    Ok(admit(writer, guard))
}

/// Makes the holder of the writer a member of the open batch, in the
/// savepoint opened for it.
fn admit(writer: Arc<Writer>, mut guard: OwnedMutexGuard<State>) -> Member {
    let state = &mut *guard;
    state.spare = false;
    state.in_savepoint = true;
    let batch = state.batch.as_mut().expect("a member joins an open batch");
    batch.members += 1;
    let done = batch.done.subscribe();
    Member {
        writer,
        guard: Some(guard),
        done,
        released: false,
    }
}

/// `BEGIN IMMEDIATE` with the first member's savepoint, in one hop; the
/// memo is forgotten if another connection wrote since the last batch.
async fn open_batch(pool: &AnyPool, state: &mut State) -> sqlx::Result<()> {
    let mut conn = pool.acquire().await?;
    let opened = super::sqlite::connections_opened();
    let begun = conn
        .fetch_all(sqlx::raw_sql(
            "BEGIN IMMEDIATE; SAVEPOINT member; PRAGMA data_version",
        ))
        .await;
    let version = match begun {
        Ok(rows) => rows.first().map_or(Ok(0), |row| row.try_get::<i64, _>(0)),
        Err(e) => Err(e),
    };
    let version = match version {
        Ok(version) => version,
        Err(e) => {
            // BEGIN may have run before what failed.
            let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
            // A connection that met a read-only disk may have been reopened
            // read-only by SQLite and would stay so once the disk is
            // writable again: the next batch gets a new one.
            if super::storage_unavailable(&e) {
                conn.close_on_drop();
            }
            return Err(e);
        }
    };
    if state.seen != Some((opened, version)) {
        state.memo.forget();
        state.seen = Some((opened, version));
    }
    state.next_id += 1;
    state.conn = Some(conn);
    state.spare = true;
    state.batch = Some(Batch {
        id: state.next_id,
        members: 0,
        finisher: false,
        done: watch::channel(None).0,
    });
    Ok(())
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

/// Ends a member's savepoint (kept or undone), then commits the batch now or
/// makes sure a later task will.
async fn leave(
    writer: Arc<Writer>,
    mut guard: OwnedMutexGuard<State>,
    ended: Ended,
) -> sqlx::Result<()> {
    let close = closes(&writer, &guard);
    let state = &mut *guard;
    let keep = ended != Ended::Undo;
    if keep && close {
        // COMMIT ends the member's savepoint (or the next one, opened by
        // its last write) with the whole batch.
        state.in_savepoint = false;
        state.memo.keep_member();
        commit_batch(state).await;
        return Ok(());
    }
    if ended == Ended::Released {
        hand_on(&writer, state);
        return Ok(());
    }
    let ended = if keep {
        let conn = state.conn.as_mut().expect("a savepoint lives in a batch");
        let released = conn
            .execute(sqlx::raw_sql("RELEASE member; SAVEPOINT member"))
            .await
            .map(drop);
        state.in_savepoint = false;
        state.memo.keep_member();
        state.spare = released.is_ok();
        released
    } else {
        undo_member(state, !close).await
    };
    if let Err(e) = ended {
        // The savepoint is gone only when SQLite rolled back the whole
        // transaction (disk full, I/O error): nothing in the batch stands.
        abort_batch(state, &e).await;
        return Err(e);
    }
    if close {
        commit_batch(state).await;
    } else {
        finish_later(&writer, state);
    }
    Ok(())
}

/// Whether the member holding the writer should commit the batch as it
/// leaves: nobody waits to join it, or it is full.
fn closes(writer: &Writer, state: &State) -> bool {
    let batch = state.batch.as_ref().expect("a savepoint lives in a batch");
    writer.queued.load(Ordering::SeqCst) == 0 || batch.members >= MAX_MEMBERS
}

/// Hands the open batch on from a member whose last write released its
/// savepoint and opened the next one ([`RELEASE`]), making sure a later
/// task commits it.
fn hand_on(writer: &Arc<Writer>, state: &mut State) {
    state.in_savepoint = false;
    state.memo.keep_member();
    state.spare = true;
    finish_later(writer, state);
}

/// Makes sure a task will commit the open batch.
fn finish_later(writer: &Arc<Writer>, state: &mut State) {
    let batch = state.batch.as_mut().expect("a savepoint lives in a batch");
    if !batch.finisher {
        // Queued behind those already waiting: they join this batch first.
        batch.finisher = true;
        tokio::spawn(finish(writer.clone(), batch.id));
    }
}

/// Commits batch `id` unless someone already ended it.
async fn finish(writer: Arc<Writer>, id: u64) {
    let mut guard = writer.lock().await;
    let state = &mut *guard;
    if state.batch.as_ref().is_some_and(|b| b.id == id) {
        if state.in_savepoint
            && let Err(e) = undo_member(state, false).await
        {
            abort_batch(state, &e).await;
            return;
        }
        commit_batch(state).await;
    }
}

/// Undoes the open member's savepoint and what it changed in the memo, in
/// one hop; with `spare`, opens the next member's savepoint in it too.
async fn undo_member(state: &mut State, spare: bool) -> sqlx::Result<()> {
    let conn = state.conn.as_mut().expect("a savepoint lives in a batch");
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
        // Its last write ran up to its [`RELEASE`] and was abandoned before
        // the next savepoint opened: its writes stand, as a commit whose
        // answer was lost.
        undone = match spare {
            true => conn.execute("SAVEPOINT member").await.map(drop),
            false => Ok(()),
        };
    }
    state.in_savepoint = false;
    state.memo.undo_member();
    state.spare = spare && undone.is_ok();
    undone
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

/// The outer `COMMIT` (which also ends any savepoint still open), then
/// every member hears how it went.
async fn commit_batch(state: &mut State) {
    let batch = state.batch.take().expect("commit of an open batch");
    state.spare = false;
    let mut conn = state
        .conn
        .take()
        .expect("an open batch holds the connection");
    let started = std::time::Instant::now();
    let outcome = match sqlx::query("COMMIT").execute(&mut *conn).await {
        Ok(_) => {
            super::stats::WRITES.committed(batch.members, started.elapsed());
            Ok(())
        }
        Err(e) => {
            super::stats::WRITES.failed();
            tracing::error!(error = %e, members = batch.members, "a group commit failed");
            state.memo.forget();
            // A failed COMMIT can leave the transaction open; after a full
            // or read-only disk, the next batch starts on a new connection.
            let rolled_back = sqlx::query("ROLLBACK").execute(&mut *conn).await.is_ok();
            if !rolled_back || super::storage_unavailable(&e) {
                conn.close_on_drop();
            }
            Err(failure(&e))
        }
    };
    // Before any member hears back, so every request that follows a
    // member's answer sees the count moved (a failed batch counts too).
    state.commits.fetch_add(1, Ordering::SeqCst);
    batch.done.send_replace(Some(outcome));
}

/// Rolls the whole batch back and reports `why` to every member.
async fn abort_batch(state: &mut State, why: &sqlx::Error) {
    super::stats::WRITES.failed();
    tracing::error!(error = %why, "a write batch was rolled back");
    state.in_savepoint = false;
    state.spare = false;
    state.memo.forget();
    if let Some(mut conn) = state.conn.take()
        && sqlx::query("ROLLBACK").execute(&mut *conn).await.is_err()
    {
        conn.close_on_drop();
    }
    if let Some(batch) = state.batch.take() {
        batch.done.send_replace(Some(Err(failure(why))));
    }
}

/// What every member of a failed batch is told: a full or read-only disk,
/// and a lock held elsewhere too long, keep their meaning as I/O error kinds.
fn failure(err: &sqlx::Error) -> Failure {
    let kind = match err {
        sqlx::Error::Io(io) => io.kind(),
        _ if super::storage_unavailable(err) => std::io::ErrorKind::StorageFull,
        _ if super::interrupted(err) => std::io::ErrorKind::ResourceBusy,
        _ => std::io::ErrorKind::Other,
    };
    (kind, Arc::from(err.to_string()))
}
