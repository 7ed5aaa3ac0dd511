//! WAL checkpoints off the writer's path (SQLite).
//!
//! SQLite copies the WAL back into the database file (a checkpoint) from
//! the connection whose commit grew the WAL past 1,000 pages, right after
//! that commit. On the single writer that copy (WAL frames read back, pages
//! written, an fsync of the database file) ran between two batches, while
//! every request queued for the writer waited: `perf record` of the
//! writer's thread put 16% of its CPU there at c=64 (`docs/performance.md`).
//!
//! Here the writer's connection gets a WAL hook of ours instead of
//! SQLite's: once per [`ASK_AT`] new pages in the WAL (SQLite's own
//! threshold), the hook asks the daemon's checkpoint task, which runs a
//! `PASSIVE` checkpoint on a read connection. It waits for no one and no
//! one waits for it, on a core the writer is not using, and each pass
//! copies about what SQLite's own checkpoint did, so the disk sees no more
//! of them (a pass every 100 ms, tried before, cost round trips at c=1 a
//! quarter of their rate). SQLite starts the WAL over at the first write
//! transaction that finds every frame copied; under steady writes a pass
//! rarely catches up with the writer, so the WAL grows until one does, or
//! until [`SELF_AT`] pages, where the writer checkpoints itself as SQLite
//! would (copying what the passes left, and starting the WAL over). That
//! bounds the `-wal` file. Without a task (a `Db` closed, say) the writer
//! checkpoints itself past [`ASK_AT`], as before.
//!
//! sqlx offers no WAL hook, and SQLite puts its own on every connection as
//! it opens, after the process's auto-extensions have run. So an
//! auto-extension registers an SQL function, `widgetd_wal_hook()`, that
//! the write pool calls as each of its connections opens ([`INSTALL`]):
//! the hook is then ours on the writer alone (readers never commit). The
//! CLI opens the database as the daemon does, with a task of its own.
//!
//! Durability does not move: a commit is fsynced in the WAL before it is
//! acknowledged, whoever copies it later.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once, PoisonError, Weak};

use libsqlite3_sys as ffi;
use sqlx::AnyPool;
use tokio::sync::Notify;

/// Pages in the WAL past which a commit asks for a checkpoint: SQLite's
/// own default (`wal_autocheckpoint`).
const ASK_AT: c_int = 1_000;

/// Pages in the WAL past which the writer checkpoints itself: about
/// 40 MiB of 4 KiB pages.
const SELF_AT: c_int = 10_000;

/// How often the task looks whether a write reached the disk again, when
/// it was asked for a pass after one did not.
const AFTER_A_FAILED_WRITE: std::time::Duration = std::time::Duration::from_millis(100);

/// Run by the write pool as each of its connections opens: puts the hook
/// on that connection.
pub(super) const INSTALL: &str = "SELECT widgetd_wal_hook()";

/// Checkpoints the tasks of this process have run, for `/metrics`.
static PASSES: AtomicU64 = AtomicU64::new(0);

/// How many checkpoints the tasks of this process have run.
pub fn passes() -> u64 {
    PASSES.load(Ordering::Relaxed)
}

/// The running tasks, by their database file as SQLite names it.
static TASKS: Mutex<Vec<(Vec<u8>, Weak<Notify>)>> = Mutex::new(Vec::new());

/// Makes `widgetd_wal_hook()` known to every SQLite connection the
/// process opens from now on. Call before opening the write pool.
pub(super) fn register() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: `on_open` has the signature SQLite calls an
        // auto-extension with, and lives as long as the process.
        let rc = unsafe { ffi::sqlite3_auto_extension(Some(on_open)) };
        if rc != ffi::SQLITE_OK {
            tracing::warn!(
                rc,
                "cannot register the WAL hook; SQLite checkpoints on the writer"
            );
        }
    });
}

/// What the hook remembers of its connection: the WAL's size in pages
/// when it last asked the task (0: not since the WAL started over).
#[derive(Default)]
struct Hook {
    asked_at: AtomicI32,
}

/// The auto-extension: registers `widgetd_wal_hook()` on a new connection,
/// with the connection's [`Hook`] state, freed as the connection closes.
/// Answers OK whatever came of it: SQLite fails the open of a connection
/// whose auto-extension fails, and without the function the write pool's
/// [`INSTALL`] fails instead, which leaves SQLite's own hook in place.
unsafe extern "C" fn on_open(
    db: *mut ffi::sqlite3,
    _error: *mut *mut c_char,
    _api: *const ffi::sqlite3_api_routines,
) -> c_int {
    let hook = Box::into_raw(Box::<Hook>::default());
    // SAFETY: `db` is the connection being opened; the name is a static C
    // string; `install` has the signature of a scalar function, and
    // `free_hook` frees `hook` when SQLite drops the function (as the
    // connection closes, or at once if registering fails). Direct only: no
    // trigger or view can call it.
    unsafe {
        ffi::sqlite3_create_function_v2(
            db,
            c"widgetd_wal_hook".as_ptr(),
            0,
            ffi::SQLITE_UTF8 | ffi::SQLITE_DIRECTONLY,
            hook.cast(),
            Some(install),
            None,
            None,
            Some(free_hook),
        );
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn free_hook(hook: *mut c_void) {
    // SAFETY: `hook` came from `Box::into_raw` in `on_open`, and SQLite
    // frees it once.
    drop(unsafe { Box::from_raw(hook.cast::<Hook>()) });
}

/// `widgetd_wal_hook()`: replaces SQLite's WAL hook on the calling
/// connection with [`on_commit`]; answers 1.
unsafe extern "C" fn install(
    context: *mut ffi::sqlite3_context,
    _argc: c_int,
    _argv: *mut *mut ffi::sqlite3_value,
) {
    // SAFETY: `context` is the call's, its connection is open while the
    // call runs, and the function's user data (the connection's `Hook`)
    // lives as long as the connection.
    unsafe {
        let db = ffi::sqlite3_context_db_handle(context);
        ffi::sqlite3_wal_hook(db, Some(on_commit), ffi::sqlite3_user_data(context));
        ffi::sqlite3_result_int(context, 1);
    }
}

/// Called by SQLite after each commit on the writer's connection, with the
/// pages now in the WAL. Asks the task once per [`ASK_AT`] new pages, so
/// that a pass copies about as much as SQLite's own checkpoint did (under
/// steady load the WAL starts over only once a pass has caught up with
/// the writer, and it grows meanwhile). Must not panic: it runs inside
/// SQLite.
unsafe extern "C" fn on_commit(
    hook: *mut c_void,
    db: *mut ffi::sqlite3,
    name: *const c_char,
    pages: c_int,
) -> c_int {
    // SAFETY: `install` passed the connection's `Hook`, alive while the
    // connection is open.
    let asked_at = unsafe { &(*hook.cast::<Hook>()).asked_at };
    let mut last = asked_at.load(Ordering::Relaxed);
    if pages < last {
        // The WAL started over.
        last = 0;
        asked_at.store(0, Ordering::Relaxed);
    }
    if pages < last.saturating_add(ASK_AT) {
        return ffi::SQLITE_OK;
    }
    // SAFETY: `db` and `name` are the committing connection's and its
    // database's name, valid during the call; SQLite's file name is a C
    // string (or null for a database without a file).
    let file = unsafe { ffi::sqlite3_db_filename(db, name) };
    if pages < SELF_AT && !file.is_null() && ask(unsafe { CStr::from_ptr(file) }.to_bytes()) {
        asked_at.store(pages, Ordering::Relaxed);
        return ffi::SQLITE_OK;
    }
    // As SQLite's own hook does (at every commit past the threshold); its
    // outcome is not the commit's.
    // SAFETY: as above; null counts are allowed.
    unsafe {
        ffi::sqlite3_wal_checkpoint_v2(
            db,
            name,
            ffi::SQLITE_CHECKPOINT_PASSIVE,
            null_mut(),
            null_mut(),
        );
    }
    asked_at.store(0, Ordering::Relaxed);
    ffi::SQLITE_OK
}

/// Wakes the task of `file`, if one runs.
fn ask(file: &[u8]) -> bool {
    let tasks = TASKS.lock().unwrap_or_else(PoisonError::into_inner);
    let task = tasks
        .iter()
        .filter(|(f, _)| f == file)
        .find_map(|(_, task)| task.upgrade());
    task.map(|task| task.notify_one()).is_some()
}

/// The checkpoint task of one database; it ends when this is dropped.
#[derive(Debug)]
pub(super) struct Checkpointer {
    wake: Arc<Notify>,
    stopped: Arc<AtomicBool>,
    /// Checkpoints this task has run.
    passes: Arc<AtomicU64>,
}

impl Checkpointer {
    /// Starts the task, which checkpoints on a connection of `read`.
    pub(super) fn start(read: AnyPool) -> Self {
        let this = Self {
            wake: Arc::new(Notify::new()),
            stopped: Arc::new(AtomicBool::new(false)),
            passes: Arc::new(AtomicU64::new(0)),
        };
        tokio::spawn(run(
            read,
            this.wake.clone(),
            this.stopped.clone(),
            this.passes.clone(),
        ));
        this
    }

    /// Ends the task before its pool closes: it starts no checkpoint after
    /// this (one already running returns its connection when done).
    pub(super) fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        self.wake.notify_one();
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn run(read: AnyPool, wake: Arc<Notify>, stopped: Arc<AtomicBool>, passes: Arc<AtomicU64>) {
    // The file as SQLite names it, which is what the hook is told.
    let file = sqlx::query_scalar::<_, String>(
        "SELECT file FROM pragma_database_list WHERE name = 'main'",
    )
    .fetch_one(&read)
    .await;
    let file = match file {
        Ok(file) => file.into_bytes(),
        Err(e) => {
            tracing::warn!(error = %e, "no WAL checkpoint task; SQLite checkpoints on the writer");
            return;
        }
    };
    {
        let mut tasks = TASKS.lock().unwrap_or_else(PoisonError::into_inner);
        tasks.retain(|(_, task)| task.strong_count() > 0);
        tasks.push((file, Arc::downgrade(&wake)));
    }
    loop {
        wake.notified().await;
        if stopped.load(Ordering::SeqCst) {
            return;
        }
        // After a write that did not reach the disk (a full or read-only
        // disk), the WAL is left as it is until a write succeeds again: a
        // checkpoint would let the next write reuse the log's space, and
        // `/readyz`'s probe would pass on a disk that is still full.
        while !super::stats::WRITES.last_ok.load(Ordering::Relaxed) {
            if stopped.load(Ordering::SeqCst) {
                return;
            }
            tokio::time::sleep(AFTER_A_FAILED_WRITE).await;
        }
        let Ok(mut conn) = read.acquire().await else {
            return;
        };
        if stopped.load(Ordering::SeqCst) {
            return;
        }
        match sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
            .execute(&mut *conn)
            .await
        {
            Ok(_) => {
                passes.fetch_add(1, Ordering::Relaxed);
                PASSES.fetch_add(1, Ordering::Relaxed);
            }
            // The writer's own checkpoint still bounds the WAL.
            Err(e) => tracing::warn!(error = %e, "a WAL checkpoint failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, PoisonError};
    use std::time::Duration;

    use super::{ASK_AT, Checkpointer, Ordering, TASKS};
    use crate::testing::TestDb;

    #[tokio::test]
    async fn the_writer_asks_the_task_to_checkpoint_once_the_wal_passes_the_threshold() {
        let test = TestDb::new().await;
        let db = &test.db;
        let checkpointer = db.checkpointer.as_ref().expect("SQLite has a task");
        // Asked only once it knows its file; before, the writer would
        // checkpoint itself.
        wait_for("the task to start", || registered(checkpointer)).await;
        let mut tx = db.begin_write().await.unwrap();
        sqlx::query("CREATE TABLE scratch (b BLOB)")
            .execute(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        // With SQLite's own hook the writer would have copied the WAL
        // itself, and the task would not have run.
        write_past_the_threshold(db).await;
        wait_for("a checkpoint of the task's", || passes(checkpointer) > 0).await;
        // Once the WAL started over (everything copied, then a write),
        // its first threshold asks again.
        sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
            .execute(&db.read)
            .await
            .unwrap();
        let before = passes(checkpointer);
        write_past_the_threshold(db).await;
        wait_for("a second checkpoint", || passes(checkpointer) > before).await;
    }

    /// About 100 pages per commit, past the threshold in all.
    async fn write_past_the_threshold(db: &crate::db::Db) {
        let commits = usize::try_from(ASK_AT).unwrap() / 100 + 3;
        for _ in 0..commits {
            let mut tx = db.begin_write().await.unwrap();
            sqlx::query(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100) \
                 INSERT INTO scratch SELECT randomblob(3000) FROM n",
            )
            .execute(&mut *tx)
            .await
            .unwrap();
            tx.commit().await.unwrap();
        }
    }

    fn passes(checkpointer: &Checkpointer) -> u64 {
        checkpointer.passes.load(Ordering::Relaxed)
    }

    fn registered(checkpointer: &Checkpointer) -> bool {
        let tasks = TASKS.lock().unwrap_or_else(PoisonError::into_inner);
        tasks
            .iter()
            .any(|(_, task)| std::ptr::eq(task.as_ptr(), Arc::as_ptr(&checkpointer.wake)))
    }

    async fn wait_for(what: &str, done: impl Fn() -> bool) {
        let step = Duration::from_millis(20);
        let mut waited = Duration::ZERO;
        while !done() {
            assert!(waited < Duration::from_secs(30), "waited 30 s for {what}");
            tokio::time::sleep(step).await;
            waited += step;
        }
    }
}
