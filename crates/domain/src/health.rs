//! What the operator's endpoints read of the database: whether it can be
//! written (`/readyz`), and the counts `/metrics` shows.

use crate::db::{Db, WriteTx};

/// A write that leaves no trace but still has to reach the disk: on
/// SQLite a 64 KiB row added and removed (enough pages that a full disk
/// refuses it, not a page the log could reuse); on PostgreSQL an update
/// that changes no value.
pub async fn probe_write(tx: &mut WriteTx) -> sqlx::Result<()> {
    if tx.dialect().sql().shared_by_daemons() {
        sqlx::query("UPDATE auth_epoch SET epoch = epoch WHERE id = 1")
            .execute(&mut **tx)
            .await?;
        return Ok(());
    }
    let key = format!("readyz:{}", "0".repeat(64 * 1024));
    sqlx::query("INSERT INTO rate_limits (key, tokens, updated_at) VALUES ($1, 0, 0)")
        .bind(&key)
        .execute(&mut **tx)
        .await?;
    sqlx::query("DELETE FROM rate_limits WHERE key = $1")
        .bind(&key)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// The counts `/metrics` shows of what is stored.
pub struct Gauges {
    /// Widgets by kind and status.
    pub widgets: Vec<(String, String, i64)>,
    /// Resume prompts not acknowledged yet.
    pub queued: i64,
    /// Webhook notices still to send, and given up.
    pub outbox: i64,
    pub given_up: i64,
}

/// Reads the [`Gauges`].
pub async fn gauges(db: &Db) -> sqlx::Result<Gauges> {
    let mut conn = db.read.acquire().await?;
    let widgets = sqlx::query_as(
        "SELECT kind, status, count(*) FROM widgets GROUP BY kind, status ORDER BY kind, status",
    )
    .fetch_all(&mut *conn)
    .await?;
    let queued = sqlx::query_scalar("SELECT count(*) FROM prompts WHERE acked_at IS NULL")
        .fetch_one(&mut *conn)
        .await?;
    let outbox = sqlx::query_scalar(
        "SELECT count(*) FROM webhook_outbox WHERE delivered_at IS NULL AND failed_at IS NULL",
    )
    .fetch_one(&mut *conn)
    .await?;
    let given_up =
        sqlx::query_scalar("SELECT count(*) FROM webhook_outbox WHERE failed_at IS NOT NULL")
            .fetch_one(&mut *conn)
            .await?;
    Ok(Gauges {
        widgets,
        queued,
        outbox,
        given_up,
    })
}
