//! PostgreSQL's audit chain, sealed after the commit.
//!
//! Several daemons write concurrently, so a write transaction cannot read
//! the chain's head without serialising every writer behind it. Instead it
//! stages its rows in `audit_pending`; after it commits, the sealer (one at
//! a time in the deployment, under an advisory lock) moves every staged
//! row into `audit_log`, in the order of the staging table's ids, giving
//! each the next id and chaining its hash to the row before. A staged row
//! is durable from its transaction's commit, and lands in the chain
//! exactly once: its move and its deletion from the staging table are one
//! transaction. SQLite, with one writer, chains rows as they are written.

use futures_util::future::BoxFuture;
use sqlx::{AnyConnection, AnyPool, Connection};

use super::AuditRow;

/// The sealer's lock (a PostgreSQL advisory lock key); a transaction that
/// chains its rows itself ([`chain_on`]) holds it too.
pub const SEAL_LOCK: i64 = 0x7769_6467_6574_6402; // "widget" + 2

/// How many staged rows one sealing transaction moves at most.
const BATCH: i64 = 500;

/// The after-commit hook of a transaction that staged rows.
pub fn after_commit(pool: AnyPool) -> BoxFuture<'static, sqlx::Result<()>> {
    Box::pin(async move { seal(&pool).await.map(drop) })
}

/// Seals every staged row; returns how many. A no-op on SQLite.
pub async fn seal(pool: &AnyPool) -> sqlx::Result<u64> {
    let mut conn = pool.acquire().await?;
    seal_on(&mut conn).await
}

/// [`seal`] on one connection (outside a transaction).
pub async fn seal_on(conn: &mut AnyConnection) -> sqlx::Result<u64> {
    if !crate::db::Dialect::of(conn)
        .sql()
        .seals_audit_after_commit()
    {
        return Ok(0);
    }
    let mut sealed = 0;
    loop {
        let moved = seal_batch(conn).await?;
        sealed += moved;
        if moved < BATCH as u64 {
            return Ok(sealed);
        }
    }
}

/// One sealing transaction: at most [`BATCH`] rows.
async fn seal_batch(conn: &mut AnyConnection) -> sqlx::Result<u64> {
    let mut tx = conn.begin().await?;
    sqlx::query("SELECT 1 FROM (SELECT pg_advisory_xact_lock($1)) AS locked")
        .bind(SEAL_LOCK)
        .execute(&mut *tx)
        .await?;
    // Taken and deleted in one statement: exactly the rows returned leave
    // the staging table. (A row with a lower id may commit after a higher
    // one was read; a separate "delete up to the last id read" would drop
    // it unsealed.) The chain's head comes with each row, read in the same
    // statement under the sealer's lock: one round trip for both.
    let mut staged: Vec<Staged> = sqlx::query_as(
        "WITH taken AS (
             DELETE FROM audit_pending
             WHERE id IN (SELECT id FROM audit_pending ORDER BY id LIMIT $1)
             RETURNING id, at, actor, action, session_id, widget_id, names, scope, client_addr,
                       detail)
         SELECT taken.*, head.id AS head_id, head.hash AS head_hash
         FROM taken LEFT JOIN (SELECT id, hash FROM audit_log ORDER BY id DESC LIMIT 1) AS head
              ON true",
    )
    .bind(BATCH)
    .fetch_all(&mut *tx)
    .await?;
    let Some(first) = staged.first() else {
        tx.rollback().await?;
        return Ok(0);
    };
    let head = first.head_id.zip(first.head_hash.clone());
    staged.sort_unstable_by_key(|row| row.id);
    let count = staged.len() as u64;
    let rows = staged.into_iter().map(|row| AuditRow {
        id: 0,
        at: row.at,
        actor: row.actor,
        action: row.action,
        session_id: row.session_id,
        widget_id: row.widget_id,
        names: row.names,
        scope: row.scope,
        client_addr: row.client_addr,
        detail: row.detail,
        prev_hash: Vec::new(),
        hash: Vec::new(),
    });
    super::insert_chained(&mut tx, chain(head, rows)).await?;
    tx.commit().await?;
    Ok(count)
}

/// Chains `rows` (their ids and hashes unset) after `head`, the chain's
/// head as read inside the caller's transaction, which holds
/// [`SEAL_LOCK`] since before that read (a group reads it with its
/// statement, `widgets/engine/store/grouped.rs`): rows written so skip the staging
/// table and the sealer, and take their places in the chain at their
/// commit.
pub async fn chain_on(
    conn: &mut AnyConnection,
    head: Option<(i64, Vec<u8>)>,
    rows: Vec<AuditRow>,
) -> sqlx::Result<()> {
    super::insert_chained(conn, chain(head, rows)).await
}

/// `rows` given the ids and hashes that follow `head` (none: the chain is
/// empty).
fn chain(head: Option<(i64, Vec<u8>)>, rows: impl IntoIterator<Item = AuditRow>) -> Vec<AuditRow> {
    let (mut id, mut prev) = head.unwrap_or((0, vec![0u8; 32]));
    rows.into_iter()
        .map(|mut row| {
            id += 1;
            row.id = id;
            row.hash = row.compute_hash(&prev);
            row.prev_hash = std::mem::replace(&mut prev, row.hash.clone());
            row
        })
        .collect()
}

/// A staged row: an audit row without its place in the chain.
#[derive(sqlx::FromRow)]
struct Staged {
    id: i64,
    at: i64,
    actor: String,
    action: String,
    session_id: Option<String>,
    widget_id: Option<String>,
    names: Option<String>,
    scope: Option<String>,
    client_addr: Option<String>,
    detail: Option<String>,
    /// The chain's head as the statement saw it (none while it is empty).
    head_id: Option<i64>,
    head_hash: Option<Vec<u8>>,
}
