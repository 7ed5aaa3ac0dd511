//! The embedded SQLite file: WAL, fsync on every commit, foreign keys and
//! secure delete on, a single writer connection and a few readers.

pub(crate) mod batch;
pub(crate) mod deferred;
pub mod integrity;
pub(crate) mod memo;
pub(crate) mod pipe;
pub(crate) mod sql;
pub(crate) mod writer;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{AnyPool, ConnectOptions, Connection};

/// Set on every connection (sqlx's Any driver takes no SQLite options, so
/// they are statements run as each connection opens).
const PRAGMAS: &[&str] = &[
    "PRAGMA journal_mode = WAL",
    // An acknowledged write survives power loss.
    "PRAGMA synchronous = FULL",
    "PRAGMA foreign_keys = ON",
    // Deleted or replaced ciphertexts are overwritten with zeros.
    "PRAGMA secure_delete = ON",
    "PRAGMA busy_timeout = 10000",
    // Savepoint undo journals and sorts stay off the disk.
    "PRAGMA temp_store = MEMORY",
];

/// Connections opened since the start (by every pool of the process): the
/// writer forgets its memo when its connection may have been replaced.
static OPENED: AtomicU64 = AtomicU64::new(0);

pub(super) fn connections_opened() -> u64 {
    OPENED.load(Ordering::SeqCst)
}

/// Opens the file at `path` (created with mode 0600 if missing): the read
/// pool and the single-connection write pool.
pub(super) async fn open(path: &Path) -> anyhow::Result<(AnyPool, AnyPool)> {
    sqlx::any::install_default_drivers();
    create_private_file(path)?;
    let url = SqliteConnectOptions::new().filename(path).to_url_lossy();
    let options = AnyConnectOptions::from_url(&url)
        .with_context(|| format!("cannot open the database {}", path.display()))?;
    // One connection first, outside a pool: a pool retries a connection
    // whose set-up fails until its time-out, and would hide that the file
    // is damaged (or is no database) behind "timed out".
    let probe = connect(&options)
        .await
        .with_context(|| format!("cannot open the database {}", path.display()))?;
    probe.close().await?;
    let pool = |connections: u32| {
        AnyPoolOptions::new()
            .max_connections(connections)
            .after_connect(|conn, _| {
                Box::pin(async move {
                    OPENED.fetch_add(1, Ordering::SeqCst);
                    for pragma in PRAGMAS {
                        sqlx::query(pragma).execute(&mut *conn).await?;
                    }
                    Ok(())
                })
            })
    };
    let write = pool(1)
        // The writer takes the connection once per batch; a ping before
        // each would add a round trip to every group commit.
        .test_before_acquire(false)
        .connect_with(options.clone())
        .await
        .with_context(|| format!("cannot open the database {}", path.display()))?;
    let read = pool(8)
        // A local file does not drop connections: no ping before each read.
        .test_before_acquire(false)
        .connect_with(options)
        .await
        .with_context(|| format!("cannot open the database {}", path.display()))?;
    Ok((read, write))
}

/// One connection outside the pools, set up as theirs are: the probe that
/// opens the file, and the poll connection of `changes.rs`.
pub(super) async fn connect(options: &AnyConnectOptions) -> sqlx::Result<sqlx::AnyConnection> {
    let mut conn = sqlx::AnyConnection::connect_with(options).await?;
    for pragma in PRAGMAS {
        sqlx::query(pragma).execute(&mut conn).await?;
    }
    Ok(conn)
}

/// `VACUUM INTO` a new private file: a consistent copy while the daemon
/// runs.
pub(super) async fn backup(write: &AnyPool, target: &Path) -> anyhow::Result<()> {
    anyhow::ensure!(
        !target.exists(),
        "{} already exists; choose a new file name",
        target.display()
    );
    // Created empty and private first: VACUUM INTO fills an empty file, and
    // would otherwise create it with the default, world-readable mode.
    create_private_file(target)?;
    let target = target
        .to_str()
        .context("the backup path is not valid UTF-8")?;
    sqlx::query("VACUUM INTO $1")
        .bind(target)
        .execute(write)
        .await
        .context("the backup failed")?;
    Ok(())
}

/// SQLite's FULL, READONLY and IOERR (by primary code; sqlx reports the
/// extended one).
pub(super) fn is_storage_error(err: &(dyn sqlx::error::DatabaseError + 'static)) -> bool {
    const SQLITE_READONLY: i64 = 8;
    const SQLITE_IOERR: i64 = 10;
    const SQLITE_FULL: i64 = 13;
    err.try_downcast_ref::<sqlx::sqlite::SqliteError>()
        .and_then(sqlx::error::DatabaseError::code)
        .and_then(|code| code.parse::<i64>().ok())
        .is_some_and(|code| [SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL].contains(&(code & 0xff)))
}

/// SQLite's BUSY and LOCKED: another connection (the CLI, a backup) held
/// the lock beyond `busy_timeout`. Nothing was written; retrying succeeds
/// once it lets go.
pub(super) fn is_busy_error(err: &(dyn sqlx::error::DatabaseError + 'static)) -> bool {
    const SQLITE_BUSY: i64 = 5;
    const SQLITE_LOCKED: i64 = 6;
    err.try_downcast_ref::<sqlx::sqlite::SqliteError>()
        .and_then(sqlx::error::DatabaseError::code)
        .and_then(|code| code.parse::<i64>().ok())
        .is_some_and(|code| [SQLITE_BUSY, SQLITE_LOCKED].contains(&(code & 0xff)))
}

/// Creates the database file readable by its owner only (SQLite gives the
/// -wal and -shm files the same mode). An existing file is left alone.
fn create_private_file(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot create the database {}", path.display())),
    }
}

/// The auth epoch; SQLite's stamp comes from its own poll (`changes.rs`).
pub(super) async fn read_epoch(pool: &AnyPool) -> sqlx::Result<(i64, Option<crate::db::Stamp>)> {
    let epoch = sqlx::query_scalar("SELECT epoch FROM auth_epoch WHERE id = 1")
        .fetch_one(pool)
        .await?;
    Ok((epoch, None))
}
