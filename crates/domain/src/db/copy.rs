//! `widgetd db copy`: moves a deployment from one database to another
//! (SQLite to PostgreSQL, or back), row for row. Ciphertexts and wrapped
//! keys move as they are, so no key is needed; the target must be empty and
//! is written in one transaction, so a failed copy leaves it as it was.

use anyhow::{Context, bail, ensure};
use futures_util::TryStreamExt;
use sqlx::any::AnyTypeInfoKind;
use sqlx::{AnyConnection, Column, Row};

use super::{Backend, DatabaseUrl, Db};
use crate::progress::Progress;

/// The tables that make a deployment, parents before children, each with
/// the columns that order its rows.
const TABLES: &[(&str, &str)] = &[
    ("users", "id"),
    ("api_tokens", "id"),
    ("sessions", "id"),
    ("agent_tokens", "token_hash"),
    ("session_grants", "session_id, user_id"),
    ("keyring", "key_id"),
    ("env_vars", "id"),
    ("widgets", "id"),
    ("messages", "id"),
    ("prompts", "id"),
    ("events", "id"),
    ("audit_log", "id"),
    ("approval_rules", "id"),
    ("webhook_endpoints", "id"),
    ("webhook_outbox", "id"),
    ("slack_workspace", "id"),
    ("slack_links", "user_id"),
    ("slack_messages", "id"),
];

/// Not copied: browser sessions (people sign in again on the new
/// database), rate-limit buckets (they refill within the hour), the auth
/// epoch (a counter that only has to move on the database it belongs to)
/// and each database's own migration bookkeeping.
const SKIPPED: &[&str] = &[
    "web_sessions",
    "rate_limits",
    "auth_epoch",
    // Link codes live ten minutes; a person asks for a new one.
    "slack_link_codes",
    "_sqlx_migrations",
    // PostgreSQL's audit rows not sealed yet: sealed into `audit_log`
    // before the copy reads it.
    "audit_pending",
    // The guard of creations made on a guess (SQLite's one row, none on
    // PostgreSQL); each database has its own.
    "write_guard",
];

/// What a copy moved: rows per table, and the audit chain's head.
#[derive(Debug, serde::Serialize)]
pub struct Copied {
    pub tables: Vec<(String, i64)>,
    pub audit_rows: usize,
    pub audit_head: String,
}

/// Copies every row of `from` into the empty database `to`, then checks
/// that each table holds as many rows on both sides and that the audit
/// chain verifies on the target with the source's head.
pub async fn copy(from: &DatabaseUrl, to: &DatabaseUrl) -> anyhow::Result<Copied> {
    ensure!(from != to, "--from and --to name the same database");
    let source = Db::connect(from).await?;
    let target = Db::connect(to).await?;
    let copied = copy_between(&source, &target).await;
    source.close().await;
    target.close().await;
    copied
}

async fn copy_between(source: &Db, target: &Db) -> anyhow::Result<Copied> {
    // Both at this version's schema, as a daemon start would leave them.
    source
        .migrate()
        .await
        .context("cannot bring the source up to date")?;
    target
        .migrate()
        .await
        .context("cannot create the schema on the target")?;
    check_tables(target).await?;
    // Staged audit rows join the chain first, so the copy carries them.
    crate::audit::seal::seal(&source.write).await?;
    let mut read = source.read.begin().await?;
    if source.backend() == Backend::Postgres {
        // One snapshot for every table, whatever commits meanwhile.
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .execute(&mut *read)
            .await?;
    }
    let mut write = target.write.begin().await?;
    for (table, _) in TABLES {
        let rows: i64 = sqlx::query_scalar(&format!("SELECT count(*) FROM {table}"))
            .fetch_one(&mut *write)
            .await?;
        ensure!(
            rows == 0,
            "the target already holds data ({rows} rows in {table}); copy into an empty database"
        );
    }
    let mut tables = Vec::new();
    for (table, order) in TABLES {
        let rows = copy_table(&mut read, &mut write, table, order).await?;
        tables.push(((*table).to_owned(), rows));
    }
    if target.backend() == Backend::Postgres {
        restart_identities(&mut write).await?;
    }
    write
        .commit()
        .await
        .context("the copy could not be committed")?;
    read.rollback().await.ok();
    verify(source, target, tables).await
}

/// Refuses a schema this version of `db copy` does not know in full: a table
/// it would silently leave behind.
async fn check_tables(target: &Db) -> anyhow::Result<()> {
    let sql = match target.backend() {
        Backend::Sqlite => {
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        }
        Backend::Postgres => {
            "SELECT CAST(table_name AS TEXT) FROM information_schema.tables \
             WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
        }
    };
    let names: Vec<String> = sqlx::query_scalar(sql).fetch_all(&target.read).await?;
    let known = |name: &str| TABLES.iter().any(|(t, _)| *t == name) || SKIPPED.contains(&name);
    if let Some(unknown) = names.iter().find(|n| !known(n)) {
        bail!("the schema has a table `db copy` does not know ({unknown}); nothing was copied");
    }
    Ok(())
}

/// Streams `table` from the source into the target, row for row, with its
/// progress; returns how many rows.
async fn copy_table(
    read: &mut AnyConnection,
    write: &mut AnyConnection,
    table: &str,
    order: &str,
) -> anyhow::Result<i64> {
    let total: i64 = sqlx::query_scalar(&format!("SELECT count(*) FROM {table}"))
        .fetch_one(&mut *read)
        .await?;
    if total == 0 {
        return Ok(0);
    }
    let mut progress = Progress::new(table, u64::try_from(total).unwrap_or(0));
    let select = format!("SELECT * FROM {table} ORDER BY {order}");
    let mut rows = sqlx::query(&select).fetch(&mut *read);
    let mut insert = None;
    let mut done: i64 = 0;
    while let Some(row) = rows.try_next().await? {
        let sql = insert.get_or_insert_with(|| insert_sql(table, &row));
        let mut query = sqlx::query(sql.as_str());
        for i in 0..row.len() {
            query = bind_cell(query, &row, i)
                .with_context(|| format!("cannot read {table}.{}", row.column(i).name()))?;
        }
        query
            .execute(&mut *write)
            .await
            .with_context(|| format!("cannot write a row of {table}"))?;
        done += 1;
        progress.set(u64::try_from(done).unwrap_or(0));
    }
    progress.finish();
    Ok(done)
}

/// `INSERT INTO table (columns) VALUES ($1, …)` for the columns of `row`.
fn insert_sql(table: &str, row: &sqlx::any::AnyRow) -> String {
    let columns: Vec<&str> = row.columns().iter().map(|c| c.name()).collect();
    let params: Vec<String> = (1..=columns.len()).map(|i| format!("${i}")).collect();
    format!(
        "INSERT INTO {table} ({}) VALUES ({})",
        columns.join(", "),
        params.join(", ")
    )
}

type Query<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>;

/// Binds column `i` of `row` with its own type, so that a NULL is sent
/// typed as its column is.
fn bind_cell<'q>(query: Query<'q>, row: &sqlx::any::AnyRow, i: usize) -> anyhow::Result<Query<'q>> {
    let kind = row.column(i).type_info().kind();
    Ok(match kind {
        AnyTypeInfoKind::SmallInt | AnyTypeInfoKind::Integer | AnyTypeInfoKind::BigInt => {
            query.bind(row.try_get::<Option<i64>, _>(i)?)
        }
        AnyTypeInfoKind::Real | AnyTypeInfoKind::Double => {
            query.bind(row.try_get::<Option<f64>, _>(i)?)
        }
        AnyTypeInfoKind::Text => query.bind(row.try_get::<Option<String>, _>(i)?),
        AnyTypeInfoKind::Blob => query.bind(row.try_get::<Option<Vec<u8>>, _>(i)?),
        AnyTypeInfoKind::Bool => query.bind(row.try_get::<Option<bool>, _>(i)?),
        AnyTypeInfoKind::Null => bail!("a column without a declared type"),
    })
}

/// PostgreSQL's identity columns hand out ids after the highest copied one.
async fn restart_identities(write: &mut AnyConnection) -> anyhow::Result<()> {
    let identities: Vec<(String, String)> = sqlx::query_as(
        "SELECT CAST(table_name AS TEXT), CAST(column_name AS TEXT) FROM information_schema.columns \
         WHERE table_schema = current_schema() AND is_identity = 'YES'",
    )
    .fetch_all(&mut *write)
    .await?;
    for (table, column) in identities {
        sqlx::query(&format!(
            "SELECT setval(pg_get_serial_sequence('{table}', '{column}'), max({column})) \
             FROM {table} HAVING max({column}) IS NOT NULL"
        ))
        .fetch_all(&mut *write)
        .await?;
    }
    Ok(())
}

/// Row counts alike on both sides, and the target's audit chain verifies
/// with the source's head.
async fn verify(source: &Db, target: &Db, tables: Vec<(String, i64)>) -> anyhow::Result<Copied> {
    for (table, copied) in &tables {
        let sql = format!("SELECT count(*) FROM {table}");
        let on_target: i64 = sqlx::query_scalar(&sql).fetch_one(&target.read).await?;
        ensure!(
            on_target == *copied,
            "{table}: {copied} rows read but {on_target} on the target"
        );
    }
    let head = |db: &Db| {
        let pool = db.read.clone();
        async move {
            let mut conn = pool.acquire().await?;
            crate::audit::verify(&mut conn).await
        }
    };
    let before = head(source)
        .await?
        .context("the source's audit chain is broken")?;
    let after = head(target)
        .await?
        .context("the audit chain does not verify on the target")?;
    ensure!(
        before.head == after.head && before.rows == after.rows,
        "the audit chain differs on the target"
    );
    Ok(Copied {
        tables,
        audit_rows: after.rows,
        audit_head: after.head,
    })
}
