//! SQLite's own view of the file, for `widgetd check` and start-up: page
//! and index structure (`integrity_check` / `quick_check`), foreign keys,
//! and the shape of the write-ahead log. This is the SQLite-specific part
//! of the check; the ciphertext and audit checks work on any store, and a
//! PostgreSQL deployment checks its pages itself (`amcheck`, `pg_dump`).

use std::path::Path;

use crate::db::{Db, SQLITE_MIGRATIONS};

/// SQLite's result codes for a damaged file and for a file that is not a
/// database at all.
const SQLITE_CORRUPT: i64 = 11;
const SQLITE_NOTADB: i64 = 26;

/// Whether SQLite says the file is damaged (by primary code; sqlx reports
/// the extended one).
pub(crate) fn is_corrupt_error(err: &(dyn sqlx::error::DatabaseError + 'static)) -> bool {
    err.try_downcast_ref::<sqlx::sqlite::SqliteError>()
        .and_then(sqlx::error::DatabaseError::code)
        .and_then(|code| code.parse::<i64>().ok())
        .is_some_and(|code| [SQLITE_CORRUPT, SQLITE_NOTADB].contains(&(code & 0xff)))
}

/// What `integrity_check` (or the cheaper `quick_check`, which skips
/// comparing indexes with their tables) finds: nothing when the file is
/// sound. A file too damaged to check at all is one finding.
pub async fn structure(db: &Db, quick: bool) -> sqlx::Result<Vec<String>> {
    let pragma = if quick {
        "PRAGMA quick_check(100)"
    } else {
        "PRAGMA integrity_check(100)"
    };
    match sqlx::query_scalar::<_, String>(pragma)
        .fetch_all(&db.read)
        .await
    {
        Ok(rows) => Ok(rows.into_iter().filter(|r| r != "ok").collect()),
        Err(err) if crate::db::is_corrupt(&err) => Ok(vec![err.to_string()]),
        Err(err) => Err(err),
    }
}

/// A row whose foreign key points at a row that is not there.
#[derive(Debug, serde::Serialize, sqlx::FromRow)]
pub struct DanglingRow {
    pub table: String,
    pub rowid: Option<i64>,
    pub parent: String,
}

/// Every row whose foreign key points nowhere (`foreign_key_check`).
pub async fn foreign_keys(db: &Db) -> sqlx::Result<Vec<DanglingRow>> {
    let rows: Vec<(String, Option<i64>, String, i64)> =
        match sqlx::query_as("PRAGMA foreign_key_check")
            .fetch_all(&db.read)
            .await
        {
            Ok(rows) => rows,
            Err(err) if crate::db::is_corrupt(&err) => return Ok(Vec::new()),
            Err(err) => return Err(err),
        };
    Ok(rows
        .into_iter()
        .map(|(table, rowid, parent, _)| DanglingRow {
            table,
            rowid,
            parent,
        })
        .collect())
}

/// The number of pages in the file, for the report.
pub async fn page_count(db: &Db) -> i64 {
    sqlx::query_scalar("PRAGMA page_count")
        .fetch_one(&db.read)
        .await
        .unwrap_or(0)
}

/// Bytes of the WAL header, and of each frame's header before its page.
const WAL_HEADER: u64 = 32;
const FRAME_HEADER: u64 = 24;
const WAL_MAGIC: [u32; 2] = [0x377f_0682, 0x377f_0683];

/// Reads the write-ahead log left beside `db_file` (if any) before SQLite
/// opens it, and says what is wrong with its shape: SQLite writes whole
/// frames, so a log that ends inside a frame was cut (by a crash in the
/// middle of a write, or by something else), and one without its header
/// is not a log. SQLite keeps every transaction before the damage and
/// drops the rest; this says so instead of staying silent.
pub fn inspect_wal(db_file: &Path) -> Option<String> {
    let mut wal = db_file.as_os_str().to_owned();
    wal.push("-wal");
    let wal = Path::new(&wal);
    let mut file = std::fs::File::open(wal).ok()?;
    let len = file.metadata().ok()?.len();
    if len == 0 {
        return None;
    }
    let mut header = [0u8; WAL_HEADER as usize];
    let whole = std::io::Read::read_exact(&mut file, &mut header).is_ok();
    let name = wal.file_name().unwrap_or_default().to_string_lossy();
    let word = |at: usize| u32::from_be_bytes(header[at..at + 4].try_into().expect("4 bytes"));
    if !whole || !WAL_MAGIC.contains(&word(0)) {
        return Some(format!(
            "{name} ({len} bytes) has no valid header: SQLite ignores it, so transactions \
             written to it since the last checkpoint are lost"
        ));
    }
    let frame = FRAME_HEADER + u64::from(word(8));
    let partial = (len - WAL_HEADER) % frame;
    (partial != 0).then(|| {
        format!(
            "{name} ends {partial} bytes into a frame (frames are {frame} bytes): a write was cut \
             off. SQLite keeps the transactions before the cut and drops the one it hit and any \
             after it"
        )
    })
}

/// The embedded migrations this file has not had yet (a data dir of an
/// older widgetd, before its first start with this one).
pub async fn pending_migrations(db: &Db) -> sqlx::Result<Vec<i64>> {
    let applied: Vec<i64> = if db.has_table("_sqlx_migrations").await? {
        sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success = 1")
            .fetch_all(&db.read)
            .await?
    } else {
        Vec::new()
    };
    Ok(SQLITE_MIGRATIONS
        .iter()
        .map(|m| m.version)
        .filter(|v| !applied.contains(v))
        .collect())
}
