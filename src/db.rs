//! The embedded SQLite database: one file in the data dir, WAL, fsync on
//! every commit, foreign keys and secure delete on.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use anyhow::Context;
use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

/// File name of the database inside the data dir.
pub const DB_FILE: &str = "widgetd.db";

/// Two pools on one file: many readers, and a single writer connection so that
/// write transactions queue in-process instead of failing with SQLITE_BUSY.
#[derive(Clone, Debug)]
pub struct Db {
    pub read: SqlitePool,
    pub write: SqlitePool,
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
            .connect_with(options.clone())
            .await
            .with_context(|| format!("cannot open the database {}", path.display()))?;
        let read = SqlitePoolOptions::new()
            .max_connections(8)
            .connect_with(options)
            .await
            .with_context(|| format!("cannot open the database {}", path.display()))?;
        Ok(Self { read, write })
    }

    /// Applies the embedded migrations that have not run yet.
    pub async fn migrate(&self) -> anyhow::Result<()> {
        sqlx::migrate!("./migrations")
            .run(&self.write)
            .await
            .context("cannot apply database migrations")
    }

    /// Starts a write transaction that takes the write lock at once
    /// (`BEGIN IMMEDIATE`): a transaction that reads first and writes later
    /// could otherwise fail with SQLITE_BUSY when another process (the CLI
    /// beside a running daemon) committed in between.
    pub async fn begin_write(&self) -> sqlx::Result<sqlx::Transaction<'static, sqlx::Sqlite>> {
        match self.write.begin_with("BEGIN IMMEDIATE").await {
            // A COMMIT that failed (disk full, read-only disk) leaves SQLite
            // rolled back but sqlx still counting an open transaction on the
            // one write connection, and every later write would fail the
            // same way. That connection is closed and a fresh one opened,
            // so writes work again as soon as the disk does.
            Err(sqlx::Error::InvalidSavePointStatement) => {
                tracing::warn!("reopening the write connection after a failed commit");
                drop(self.write.acquire().await?.detach());
                self.write.begin_with("BEGIN IMMEDIATE").await
            }
            other => other,
        }
    }

    /// Whether the schema exists yet (false on a brand-new file).
    pub async fn has_table(&self, table: &str) -> sqlx::Result<bool> {
        let found: Option<i64> =
            sqlx::query_scalar("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?")
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
