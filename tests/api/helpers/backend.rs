//! Which database the tests run on. By default every test gets a SQLite
//! file in a fresh temporary data dir. With `WIDGETD_TEST_POSTGRES` set to
//! a PostgreSQL server URL (for example
//! `postgres://postgres@127.0.0.1:5432/postgres`), every data dir made by
//! [`test_dir`] gets a fresh database of its own on that server instead,
//! created on the spot and dropped with the dir, so runs never interfere.
//! The binary started by `helpers::widgetd` on such a dir is pointed at its
//! database through `WIDGETD_DATABASE_URL`. Tests of SQLite's own machinery
//! (files, WAL, group commit, a full disk) keep using plain temporary dirs.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sqlx::{Connection, Executor, PgConnection};
use tempfile::TempDir;
use widgetd_domain::db::DatabaseUrl;

/// The variable naming the PostgreSQL server to test against.
pub const TEST_POSTGRES: &str = "WIDGETD_TEST_POSTGRES";

/// The server URL when the tests run on PostgreSQL.
pub fn postgres_server() -> Option<String> {
    std::env::var(TEST_POSTGRES).ok().filter(|v| !v.is_empty())
}

/// A fresh temporary directory for data dirs. When the tests run on
/// PostgreSQL, each data dir inside it gets a database of its own the first
/// time it is opened (as each would get its own SQLite file), and all of
/// them are dropped with this.
pub struct TestDir {
    dir: TempDir,
}

/// The test dirs of this process, with the databases of their data dirs.
static DIRS: Mutex<Vec<Registered>> = Mutex::new(Vec::new());

struct Registered {
    root: PathBuf,
    server: String,
    databases: Vec<(PathBuf, TestDatabase)>,
}

pub fn test_dir() -> TestDir {
    match postgres_server() {
        Some(server) => postgres_dir_on(server),
        None => sqlite_dir(),
    }
}

/// The server the tests of several daemons use whatever the other tests
/// run on: `WIDGETD_TEST_POSTGRES`, else the local default.
pub const DEFAULT_POSTGRES: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// A fresh data dir on PostgreSQL whatever the other tests run on: for
/// tests of several daemons on one database.
pub fn postgres_dir() -> TestDir {
    postgres_dir_on(postgres_server().unwrap_or_else(|| DEFAULT_POSTGRES.to_owned()))
}

/// A fresh data dir whose database is made on the server at `server`.
pub fn postgres_dir_on(server: String) -> TestDir {
    let dir = tempfile::tempdir().unwrap();
    DIRS.lock().unwrap().push(Registered {
        root: dir.path().to_owned(),
        server,
        databases: Vec::new(),
    });
    TestDir { dir }
}

/// A fresh data dir on SQLite whatever the tests run on: for tests of
/// SQLite's own files and machinery.
pub fn sqlite_dir() -> TestDir {
    TestDir {
        dir: tempfile::tempdir().unwrap(),
    }
}

impl TestDir {
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The database of the data dir `data` (inside this dir): `None` for
    /// its SQLite file.
    pub fn database(&self, data: &Path) -> Option<DatabaseUrl> {
        database_for(data).map(|url| DatabaseUrl::parse(&url).unwrap())
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let gone: Vec<Registered> = match DIRS.lock() {
            Ok(mut dirs) => {
                let (gone, kept) = std::mem::take(&mut *dirs)
                    .into_iter()
                    .partition(|r| r.root == self.dir.path());
                *dirs = kept;
                gone
            }
            Err(_) => Vec::new(),
        };
        // Dropped outside the lock: dropping a database takes a while.
        drop(gone);
    }
}

/// The PostgreSQL database URL of the data dir `data`, created on first
/// use, when `data` lies in a [`TestDir`] made while the tests run on
/// PostgreSQL; `None` otherwise.
pub fn database_for(data: &Path) -> Option<String> {
    let mut dirs = DIRS.lock().unwrap();
    let registered = dirs.iter_mut().find(|r| data.starts_with(&r.root))?;
    if let Some((_, db)) = registered.databases.iter().find(|(path, _)| path == data) {
        return Some(db.url.clone());
    }
    let db = TestDatabase::create(&registered.server);
    let url = db.url.clone();
    registered.databases.push((data.to_owned(), db));
    Some(url)
}

/// The PostgreSQL URL of `data`'s database if it already has one.
pub fn postgres_url(data: &Path) -> Option<String> {
    let dirs = DIRS.lock().unwrap();
    dirs.iter()
        .flat_map(|r| r.databases.iter())
        .find(|(path, _)| path == data)
        .map(|(_, db)| db.url.clone())
}

/// A database created for one test on the test server, dropped (with any
/// connections still open to it) when this is dropped.
struct TestDatabase {
    server: String,
    name: String,
    url: String,
}

impl TestDatabase {
    fn create(server: &str) -> Self {
        let name = format!("widgetd_test_{}", uuid::Uuid::new_v4().simple());
        let mut url = url::Url::parse(server).expect("WIDGETD_TEST_POSTGRES is a URL");
        url.set_path(&name);
        admin(server, format!("CREATE DATABASE {name}"));
        Self {
            server: server.to_owned(),
            name,
            url: url.to_string(),
        }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        admin(
            &self.server,
            format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        );
    }
}

/// Runs one statement on the server.
fn admin(server: &str, statement: String) {
    on_own_thread(server, move |mut conn| async move {
        conn.execute(statement.as_str()).await.unwrap();
        conn.close().await.ok();
    });
}

/// The text of every row of every table of the database at `url` (blobs
/// as hex), for scanning it for a value that must not be there.
pub fn dump_rows(url: &str) -> Vec<u8> {
    let (tx, rx) = std::sync::mpsc::channel();
    on_own_thread(url, move |mut conn| async move {
        let tables: Vec<String> = sqlx::query_scalar(
            "SELECT table_name::text FROM information_schema.tables \
             WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
        )
        .fetch_all(&mut conn)
        .await
        .unwrap();
        let mut text = String::new();
        for table in tables {
            let rows: Vec<String> =
                sqlx::query_scalar(&format!("SELECT CAST(t AS text) FROM \"{table}\" AS t"))
                    .fetch_all(&mut conn)
                    .await
                    .unwrap();
            text.extend(rows.iter().map(|r| format!("{table} {r}\n")));
        }
        tx.send(text).unwrap();
    });
    rx.recv().unwrap().into_bytes()
}

/// Connects to `url` from a thread of its own and runs `work`, so that it
/// works in and out of an async test.
fn on_own_thread<F, Fut>(url: &str, work: F)
where
    F: FnOnce(PgConnection) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    let url = url.to_owned();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let conn = PgConnection::connect(&url)
                .await
                .unwrap_or_else(|e| panic!("cannot reach {TEST_POSTGRES} at {url}: {e}"));
            work(conn).await;
        });
    })
    .join()
    .expect("the test database work ran");
}
