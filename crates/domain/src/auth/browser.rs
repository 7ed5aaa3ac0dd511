//! Browser sessions as stored: a row per signed-in browser, keyed by the
//! SHA-256 of its session id (the cookie is the only place the id itself
//! exists, so a copy of the database does not let anyone ride a session),
//! with the session's data as JSON and when it expires. The server's
//! session layer (`src/web/session_store.rs`) reads and writes them here.

use sha2::{Digest, Sha256};

use crate::clock;
use crate::db::Db;
use crate::ids::UserId;

/// The key a session is stored under: the SHA-256 of its id's text.
pub fn id_hash(id: &str) -> Vec<u8> {
    Sha256::digest(id.as_bytes()).to_vec()
}

/// Stores a new session; `false` when its id is taken (the caller draws
/// another). Through the writer: the row is committed with its batch.
pub async fn insert(db: &Db, hash: &[u8], data: &str, expires_at: i64) -> sqlx::Result<bool> {
    let mut tx = db.begin_write().await?;
    let inserted = sqlx::query(
        "INSERT INTO web_sessions (id_hash, data, expires_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
    )
    .bind(hash)
    .bind(data)
    .bind(expires_at)
    .execute(&mut *tx)
    .await?;
    if inserted.rows_affected() != 1 {
        return Ok(false);
    }
    tx.commit().await?;
    Ok(true)
}

/// Stores a session's data and expiry, new or not.
pub async fn save(db: &Db, hash: &[u8], data: &str, expires_at: i64) -> sqlx::Result<()> {
    let mut tx = db.begin_write().await?;
    sqlx::query(
        "INSERT INTO web_sessions (id_hash, data, expires_at) VALUES ($1, $2, $3)
         ON CONFLICT (id_hash) DO UPDATE SET data = excluded.data, expires_at = excluded.expires_at",
    )
    .bind(hash)
    .bind(data)
    .bind(expires_at)
    .execute(&mut *tx)
    .await?;
    tx.commit().await
}

/// A live session's data and expiry.
pub async fn load(db: &Db, hash: &[u8]) -> sqlx::Result<Option<(String, i64)>> {
    sqlx::query_as(
        "SELECT data, expires_at FROM web_sessions WHERE id_hash = $1 AND expires_at > $2",
    )
    .bind(hash)
    .bind(clock::now_ms())
    .fetch_optional(&db.read)
    .await
}

/// Ends a session.
pub async fn delete(db: &Db, hash: &[u8]) -> sqlx::Result<()> {
    let mut tx = db.begin_write().await?;
    sqlx::query("DELETE FROM web_sessions WHERE id_hash = $1")
        .bind(hash)
        .execute(&mut *tx)
        .await?;
    tx.commit().await
}

/// Deletes expired sessions; returns how many.
pub async fn delete_expired(db: &Db) -> sqlx::Result<u64> {
    let done = sqlx::query("DELETE FROM web_sessions WHERE expires_at <= $1")
        .bind(clock::now_ms())
        .execute(&db.write)
        .await?;
    Ok(done.rows_affected())
}

/// Whether a person's browser session is still stored (not logged out,
/// not ended by a password change) and the person is not disabled.
pub async fn is_live(db: &Db, user: &UserId, hash: &[u8]) -> sqlx::Result<bool> {
    let found: Option<i64> = sqlx::query_scalar(
        "SELECT 1 FROM web_sessions w JOIN users u ON u.id = $1 \
         WHERE w.id_hash = $2 AND w.expires_at > $3 AND u.disabled = 0",
    )
    .bind(user)
    .bind(hash)
    .bind(clock::now_ms())
    .fetch_optional(&db.read)
    .await?;
    Ok(found.is_some())
}
