//! The database: the embedded SQLite file in the data dir (the default), or
//! one PostgreSQL database shared by several daemons.
//!
//! Both are reached through sqlx's `Any` driver, so the domain code and its
//! SQL are the same on both; what differs lives here (`sqlite.rs`,
//! `postgres.rs`) and in the few statements that must say it differently
//! ([`Dialect`]). On SQLite, writes go through group commit (`writer.rs`);
//! on PostgreSQL every write transaction takes one advisory lock, so writes
//! are serialised across daemons exactly as SQLite serialises them and every
//! invariant that rests on that (the audit chain, event and prompt order,
//! caps counted before an insert) holds on both.

mod changes;
pub mod copy;
mod postgres;
mod script;
mod sql;
mod sqlite;
pub mod stats;
mod types;
mod url;
mod write_tx;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::{AnyConnection, AnyPool};

pub use self::changes::{POLL, SNAPSHOT_COLUMNS, Stamp};
pub use self::postgres::group::{BeforeCommit, Grouped, Seen};
pub use self::postgres::write::{AfterCommit, Lock, lock, lock_all};
pub use self::script::{Script, Values};
pub use self::sql::Sql;
pub use self::sqlite::deferred::{Superseded, superseded};
pub use self::sqlite::integrity;
pub use self::sqlite::writer::Memo;
pub use self::url::DatabaseUrl;
pub use self::write_tx::WriteTx;
pub use types::Flag;
pub(crate) use types::text_enum;

/// File name of the database inside the data dir.
pub const DB_FILE: &str = "widgetd.db";

/// The migrations of each backend: the same schema, told in each dialect.
static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("../../migrations/sqlite");
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("../../migrations/postgres");

/// Which database engine holds the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sqlite => "sqlite",
            Self::Postgres => "postgres",
        }
    }

    /// How statements are spelled for this engine.
    pub fn dialect(self) -> Dialect {
        match self {
            Self::Sqlite => Dialect::Sqlite,
            Self::Postgres => Dialect::Postgres,
        }
    }
}

/// The two ways a statement is spelled where SQLite and PostgreSQL differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// The dialect of the database behind `conn`.
    pub fn of(conn: &AnyConnection) -> Self {
        if conn.backend_name() == "PostgreSQL" {
            Self::Postgres
        } else {
            Self::Sqlite
        }
    }
}

/// Where write transactions go: SQLite's single writer with its group
/// commit (`sqlite/writer.rs`), or PostgreSQL's pool with its grouped
/// writes (`postgres/`).
#[derive(Clone, Debug)]
pub(crate) enum Writes {
    Sqlite(Arc<sqlite::writer::Writer>),
    Postgres(Arc<postgres::Pg>),
}

/// The pools of one database. `read` serves reads; writes go through
/// [`Db::begin_write`]. On SQLite `write` is the single writer connection
/// (so write transactions queue in-process instead of failing with
/// SQLITE_BUSY); on PostgreSQL both are the same pool.
#[derive(Clone, Debug)]
pub struct Db {
    pub read: AnyPool,
    pub write: AnyPool,
    backend: Backend,
    writes: Writes,
    /// On SQLite, whether what a reader saw may have changed since.
    changes: Option<Arc<changes::Changes>>,
    /// PostgreSQL's URL, for the connection that hears other daemons.
    url: Option<DatabaseUrl>,
}

impl Db {
    /// Opens (creating if missing) the SQLite database at `path`. Does not
    /// migrate.
    pub async fn open(path: &Path) -> anyhow::Result<Self> {
        let (read, write) = sqlite::open(path).await?;
        Ok(Self::from_pools(Backend::Sqlite, read, write))
    }

    /// Opens the database `url` names: a SQLite file or PostgreSQL. Does not
    /// migrate.
    pub async fn connect(url: &DatabaseUrl) -> anyhow::Result<Self> {
        match url {
            DatabaseUrl::Sqlite(path) => Self::open(path).await,
            DatabaseUrl::Postgres(_) => {
                let pool = postgres::open(url).await?;
                let mut db = Self::from_pools(Backend::Postgres, pool.clone(), pool);
                db.url = Some(url.clone());
                Ok(db)
            }
        }
    }

    fn from_pools(backend: Backend, read: AnyPool, write: AnyPool) -> Self {
        let commits = Arc::new(AtomicU64::new(0));
        let changes = (backend == Backend::Sqlite).then(|| {
            Arc::new(changes::Changes::new(
                read.connect_options(),
                commits.clone(),
            ))
        });
        let writes = match backend {
            Backend::Sqlite => Writes::Sqlite(Arc::new(sqlite::writer::Writer::new(
                write.clone(),
                commits,
            ))),
            Backend::Postgres => Writes::Postgres(Arc::new(postgres::Pg::new(write.clone()))),
        };
        Self {
            read,
            write,
            backend,
            writes,
            changes,
            url: None,
        }
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Applies the embedded migrations that have not run yet. On PostgreSQL
    /// sqlx holds an advisory lock meanwhile, so two daemons starting
    /// together do not race.
    pub async fn migrate(&self) -> anyhow::Result<()> {
        let migrator = match self.backend {
            Backend::Sqlite => &SQLITE_MIGRATIONS,
            Backend::Postgres => &POSTGRES_MIGRATIONS,
        };
        migrator
            .run(&self.write)
            .await
            .map_err(|e| anyhow::anyhow!("cannot apply database migrations: {e}"))
    }

    /// Starts a write transaction. On SQLite it is a savepoint inside the
    /// writer's current batch, whose outer transaction took the write lock
    /// at once (`BEGIN IMMEDIATE`); on PostgreSQL a transaction holding the
    /// deployment's write lock. [`WriteTx::commit`] returns once the work is
    /// durable; dropping the guard undoes this transaction's work alone.
    pub async fn begin_write(&self) -> sqlx::Result<WriteTx> {
        write_tx::begin(&self.writes, false, None).await
    }

    /// [`Db::begin_write`], then [`WriteTx::lock`] of `first`: on
    /// PostgreSQL in the statement that takes the write lock, a round trip
    /// fewer, for transactions whose first step is to lock their session.
    pub async fn begin_write_locking(&self, first: Lock<'_>) -> sqlx::Result<WriteTx> {
        write_tx::begin(&self.writes, false, Some(first)).await
    }

    /// [`Db::begin_write_locking`] for a transaction that reads nothing
    /// and ends with one [`Script`] built from the writer's memory
    /// ([`WriteTx::memo`]): on SQLite it takes the writer without its
    /// connection, and its script is left to the writer's task, sent with
    /// others in one hop (`pipe.rs`); the writer's next member builds
    /// meanwhile. Reading, or writing other than with that script, needs
    /// [`WriteTx::ready`] first. Its commit may be refused as superseded
    /// ([`superseded`]): a write built before it failed, and the caller
    /// makes its work again.
    pub async fn begin_write_deferred(&self, first: Lock<'_>) -> sqlx::Result<WriteTx> {
        write_tx::begin_deferred(&self.writes, first).await
    }

    /// Writes `work` together with other requests' work of the same
    /// statement, each in its own session, in one PostgreSQL transaction
    /// and one statement (`postgres/group.rs`), and returns once the group
    /// committed and its follow-up ran: `Ok(true)` when the statement
    /// wrote it, `Ok(false)` when it did not and the caller makes it again
    /// alone (the group's statement left it out, or the group failed before
    /// its commit). Always `Ok(false)` on SQLite, whose writer groups by
    /// itself.
    pub async fn write_grouped(&self, work: Grouped) -> sqlx::Result<bool> {
        match &self.writes {
            Writes::Sqlite(_) => Ok(false),
            Writes::Postgres(pg) => postgres::group::write(pg, work).await,
        }
    }

    /// (groups of [`Db::write_grouped`] run, members they carried) since
    /// this database was opened.
    pub fn group_counts(&self) -> (u64, u64) {
        match &self.writes {
            Writes::Sqlite(_) => (0, 0),
            Writes::Postgres(pg) => pg.groups.counts(),
        }
    }

    /// A write transaction that no other write transaction of the
    /// deployment runs beside (on PostgreSQL the write lock taken alone;
    /// SQLite's writer is always alone): for changing every secret's key,
    /// creating the first data key or the first admin.
    pub async fn begin_write_exclusive(&self) -> sqlx::Result<WriteTx> {
        write_tx::begin(&self.writes, true, None).await
    }

    /// On SQLite, the state of the database as this process knows it: a
    /// copy of rows read under a stamp may be served while the stamp is
    /// the same (`changes.rs`). Take it before reading. `None` on
    /// PostgreSQL, whose stamp comes with the auth epoch (`Core::stamp`),
    /// or when it cannot be told: read the database.
    pub async fn stamp(&self) -> Option<Stamp> {
        self.changes.as_ref()?.stamp().await
    }

    /// How many write transactions are waiting for the writer right now (a
    /// gauge for operators and tests; not a lock).
    pub fn queued_writes(&self) -> usize {
        match &self.writes {
            Writes::Sqlite(writer) => writer.queued(),
            Writes::Postgres(_) => 0,
        }
    }

    /// The auth epoch (`auth/cache.rs`) and, on PostgreSQL, the stamp of
    /// the same statement's snapshot (`changes.rs`).
    pub async fn read_epoch(&self) -> sqlx::Result<(i64, Option<Stamp>)> {
        match self.backend {
            Backend::Sqlite => sqlite::read_epoch(&self.read).await,
            Backend::Postgres => postgres::read_epoch(&self.read).await,
        }
    }

    /// Whether the schema exists yet (false on a brand-new database).
    pub async fn has_table(&self, table: &str) -> sqlx::Result<bool> {
        let sql = self.backend.dialect().sql().has_table();
        let found: Option<i32> = sqlx::query_scalar(sql)
            .bind(table)
            .fetch_optional(&self.read)
            .await?;
        Ok(found.is_some())
    }

    /// Writes a consistent copy of the live SQLite database to `target`,
    /// which must not exist yet. Safe while the daemon is running. A
    /// PostgreSQL deployment is backed up with `pg_dump`.
    pub async fn backup(&self, target: &Path) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.backend == Backend::Sqlite,
            "`widgetd backup` copies the embedded SQLite database; back up PostgreSQL with \
             pg_dump (docs/operations.md, \"Several daemons\")"
        );
        sqlite::backup(&self.write, target).await
    }

    /// Runs `job` only if no other daemon of the deployment runs the job
    /// named `name` right now (a PostgreSQL advisory lock); on SQLite there
    /// is one daemon, so it always runs. Returns whether it ran.
    pub async fn exclusively<F, T>(&self, name: &str, job: F) -> anyhow::Result<Option<T>>
    where
        F: std::future::Future<Output = anyhow::Result<T>>,
    {
        match self.backend {
            Backend::Sqlite => job.await.map(Some),
            Backend::Postgres => postgres::exclusively(&self.write, name, job).await,
        }
    }

    /// Hears, until the returned task is aborted, which sessions other
    /// daemons of the deployment changed (PostgreSQL's LISTEN/NOTIFY; see
    /// [`WriteTx::notify_after_commit`]): `changed` gets each session id, and `None` when
    /// everything must be re-read because notifications may have been
    /// missed. Nothing to hear on SQLite, which has one daemon.
    pub fn follow_changes(
        &self,
        changed: impl Fn(Option<&str>) + Send + 'static,
    ) -> Option<tokio::task::JoinHandle<()>> {
        match &self.url {
            Some(DatabaseUrl::Postgres(url)) => {
                Some(tokio::spawn(postgres::follow_changes(url.clone(), changed)))
            }
            _ => None,
        }
    }

    /// Closes the pools. On SQLite the last connection to close checkpoints
    /// the WAL and removes the -wal and -shm files, so the database file
    /// alone is complete afterwards.
    pub async fn close(&self) {
        if let Some(changes) = &self.changes {
            changes.close().await;
        }
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

/// `text` for a `LIKE … ESCAPE '\\'` pattern: its `%`, `_` and `\\` match
/// themselves.
pub fn like_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Whether the database could not be written for want of room or
/// permission (SQLite's FULL, READONLY or IOERR, PostgreSQL's disk_full or
/// read-only transaction, or the same from the OS): the request changed
/// nothing and can be retried once that is fixed.
pub fn storage_unavailable(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Database(db) => {
            sqlite::is_storage_error(db.as_ref()) || postgres::is_storage_error(db.as_ref())
        }
        sqlx::Error::Io(io) => matches!(
            io.kind(),
            std::io::ErrorKind::StorageFull | std::io::ErrorKind::ReadOnlyFilesystem
        ),
        _ => false,
    }
}

/// Whether the database could not be reached: the connection was lost
/// (PostgreSQL restarted, its backend terminated by an administrator), the
/// server refused new connections for now, or none could be had in time.
/// The pool replaces lost connections by itself, so the request can be
/// retried at once.
pub fn connection_lost(err: &sqlx::Error) -> bool {
    use std::io::ErrorKind;
    match err {
        sqlx::Error::Database(db) => postgres::is_connection_error(db.as_ref()),
        sqlx::Error::Io(io) => matches!(
            io.kind(),
            ErrorKind::ConnectionReset
                | ErrorKind::ConnectionAborted
                | ErrorKind::ConnectionRefused
                | ErrorKind::BrokenPipe
                | ErrorKind::UnexpectedEof
                | ErrorKind::NotConnected
                | ErrorKind::TimedOut
        ),
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => true,
        _ => false,
    }
}

/// Whether the database stopped the statement before it finished, for a
/// reason that passes: a `statement_timeout` or `lock_timeout`, a cancel by
/// an administrator, a deadlock PostgreSQL broke, or SQLite's lock held by
/// another process beyond `busy_timeout`. The transaction was rolled back,
/// so the request can be retried at once.
pub fn interrupted(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Database(db) => {
            sqlite::is_busy_error(db.as_ref()) || postgres::is_interrupted(db.as_ref())
        }
        // How the SQLite writer tells the members of a batch that failed so.
        sqlx::Error::Io(io) => io.kind() == std::io::ErrorKind::ResourceBusy,
        _ => false,
    }
}

/// Whether the database says its data is damaged: SQLite's CORRUPT or
/// NOTADB, PostgreSQL's `data_corrupted` or `index_corrupted`.
pub fn is_corrupt(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Database(db) => {
            integrity::is_corrupt_error(db.as_ref())
                || matches!(db.code().as_deref(), Some("XX001" | "XX002"))
        }
        _ => false,
    }
}
