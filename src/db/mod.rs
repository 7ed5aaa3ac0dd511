//! The embedded SQLite database: one file in the data dir, WAL, fsync on
//! every commit, foreign keys and secure delete on.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

mod writer;

use std::sync::Arc;

use anyhow::Context;
use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

/// File name of the database inside the data dir.
pub const DB_FILE: &str = "widgetd.db";

pub use writer::WriteTx;

/// Two pools on one file: many readers, and a single writer connection so that
/// write transactions queue in-process instead of failing with SQLITE_BUSY.
/// Write transactions from [`Db::begin_write`] share that connection through
/// group commit (see `db/writer.rs`); `write` itself stays usable directly
/// (migrations, backups) while no batch is open.
#[derive(Clone, Debug)]
pub struct Db {
    pub read: SqlitePool,
    pub write: SqlitePool,
    writer: Arc<writer::Writer>,
}

impl Db {
    /// Opens (creating if missing) the database at `path`. Does not migrate.
    pub async fn open(path: &Path) -> anyhow::Result<Self> {
        create_private_file(path)?;
        let options = SqliteConnectOptions::from_str("sqlite://")
            .expect("static url")
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // An acknowledged write survives power loss.
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            // Deleted or replaced ciphertexts are overwritten with zeros.
            .pragma("secure_delete", "ON")
            .busy_timeout(Duration::from_secs(10));
        let write = SqlitePoolOptions::new()
            .max_connections(1)
            // The writer takes the connection once per batch; a ping before
            // each would add a round trip to every group commit.
            .test_before_acquire(false)
            .connect_with(options.clone())
            .await
            .with_context(|| format!("cannot open the database {}", path.display()))?;
        let read = SqlitePoolOptions::new()
            .max_connections(8)
            .connect_with(options)
            .await
            .with_context(|| format!("cannot open the database {}", path.display()))?;
        let writer = Arc::new(writer::Writer::new(write.clone()));
        Ok(Self {
            read,
            write,
            writer,
        })
    }

    /// Applies the embedded migrations that have not run yet.
    pub async fn migrate(&self) -> anyhow::Result<()> {
        sqlx::migrate!("./migrations")
            .run(&self.write)
            .await
            .context("cannot apply database migrations")
    }

    /// Starts a write transaction: a savepoint inside the writer's current
    /// batch, whose outer transaction took the write lock at once (`BEGIN
    /// IMMEDIATE`, so a read-then-write cannot fail with SQLITE_BUSY when the
    /// CLI beside a running daemon committed in between).
    /// [`WriteTx::commit`] returns once the batch is durable; dropping the
    /// guard undoes this transaction's work alone.
    pub async fn begin_write(&self) -> sqlx::Result<WriteTx> {
        writer::begin(self.writer.clone()).await
    }

    /// How many write transactions are waiting for the writer right now (a
    /// gauge for operators and tests; not a lock).
    pub fn queued_writes(&self) -> usize {
        self.writer.queued()
    }

    /// Whether the schema exists yet (false on a brand-new file).
    pub async fn has_table(&self, table: &str) -> sqlx::Result<bool> {
        let found: Option<i64> =
            sqlx::query_scalar("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = $1")
                .bind(table)
                .fetch_optional(&self.read)
                .await?;
        Ok(found.is_some())
    }

    /// Writes a consistent copy of the live database to `target`, which must
    /// not exist yet. Safe while the daemon is running.
    pub async fn backup(&self, target: &Path) -> anyhow::Result<()> {
        anyhow::ensure!(
            !target.exists(),
            "{} already exists; choose a new file name",
            target.display()
        );
        // Created empty and private first: VACUUM INTO fills an empty file,
        // and would otherwise create it with the default, world-readable mode.
        create_private_file(target)?;
        let target = target
            .to_str()
            .context("the backup path is not valid UTF-8")?;
        sqlx::query("VACUUM INTO ?")
            .bind(target)
            .execute(&self.write)
            .await
            .context("the backup failed")?;
        Ok(())
    }

    /// Closes both pools. The last connection to close checkpoints the WAL
    /// and removes the -wal and -shm files, so the database file alone is
    /// complete afterwards.
    pub async fn close(&self) {
        for pool in [&self.read, &self.write] {
            // A connection dropped a moment ago is handed back by a spawned
            // task; closing before it is back would leave it to be closed
            // after our process may already have exited.
            for _ in 0..200 {
                if pool.num_idle() == pool.size() as usize {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            pool.close().await;
        }
    }
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
