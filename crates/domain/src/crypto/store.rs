//! SQL of the `keyring` table.

use sqlx::AnyConnection;

/// A data key as stored: wrapped by the KEK.
#[derive(sqlx::FromRow)]
pub(super) struct WrappedKey {
    pub key_id: i64,
    pub nonce: Vec<u8>,
    pub wrapped_key: Vec<u8>,
    pub created_at: i64,
}

pub(super) async fn list(conn: &mut AnyConnection) -> sqlx::Result<Vec<WrappedKey>> {
    sqlx::query_as("SELECT key_id, nonce, wrapped_key, created_at FROM keyring ORDER BY key_id")
        .fetch_all(conn)
        .await
}

pub(super) async fn list_newer(
    conn: &mut AnyConnection,
    than: i64,
) -> sqlx::Result<Vec<WrappedKey>> {
    sqlx::query_as(
        "SELECT key_id, nonce, wrapped_key, created_at FROM keyring WHERE key_id > $1 ORDER BY key_id",
    )
    .bind(than)
    .fetch_all(conn)
    .await
}

pub(super) async fn newest_id(conn: &mut AnyConnection) -> sqlx::Result<Option<i64>> {
    sqlx::query_scalar("SELECT max(key_id) FROM keyring")
        .fetch_one(conn)
        .await
}

pub(super) async fn insert(conn: &mut AnyConnection, key: &WrappedKey) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO keyring (key_id, nonce, wrapped_key, created_at) VALUES ($1, $2, $3, $4)",
    )
    .bind(key.key_id)
    .bind(&key.nonce)
    .bind(&key.wrapped_key)
    .bind(key.created_at)
    .execute(conn)
    .await?;
    Ok(())
}

pub(super) async fn update(conn: &mut AnyConnection, key: &WrappedKey) -> sqlx::Result<()> {
    sqlx::query("UPDATE keyring SET nonce = $1, wrapped_key = $2 WHERE key_id = $3")
        .bind(&key.nonce)
        .bind(&key.wrapped_key)
        .bind(key.key_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Each key with the number of env var rows it encrypts.
pub(super) async fn usage(conn: &mut AnyConnection) -> sqlx::Result<Vec<(i64, i64, i64)>> {
    sqlx::query_as(
        "SELECT k.key_id, k.created_at, (SELECT count(*) FROM env_vars e WHERE e.key_id = k.key_id)
         FROM keyring k ORDER BY k.key_id",
    )
    .fetch_all(conn)
    .await
}

/// Data key ids that stored ciphertexts (env values, webhook secrets) name
/// but the keyring lacks, each with how many ciphertexts name it.
pub(super) async fn missing(conn: &mut AnyConnection) -> sqlx::Result<Vec<(i64, i64)>> {
    sqlx::query_as(
        "SELECT key_id, count(*) FROM (
             SELECT key_id FROM env_vars
             UNION ALL SELECT key_id FROM webhook_endpoints
         ) AS used
         WHERE key_id NOT IN (SELECT key_id FROM keyring)
         GROUP BY key_id ORDER BY key_id",
    )
    .fetch_all(conn)
    .await
}
