//! SQL of the `env_vars` table. Ciphertexts only: plaintext never gets here.

use sqlx::AnyConnection;

use crate::ids::{SessionId, UserId};

/// One stored value, still encrypted.
#[derive(sqlx::FromRow)]
pub(super) struct StoredValue {
    pub id: i64,
    pub owner_id: UserId,
    pub session_id: Option<SessionId>,
    pub name: String,
    pub key_id: i64,
    pub nonce: Vec<u8>,
    pub ciphertext: Vec<u8>,
}

const STORED_COLUMNS: &str = "id, owner_id, session_id, name, key_id, nonce, ciphertext";

/// Fields of a new row.
pub(super) struct NewValue<'a> {
    pub owner: &'a UserId,
    pub session: Option<&'a SessionId>,
    pub name: &'a str,
    pub key_id: i64,
    pub nonce: &'a [u8],
    pub ciphertext: &'a [u8],
    pub actor: &'a UserId,
    pub now: i64,
}

pub(super) async fn delete(
    conn: &mut AnyConnection,
    owner: &UserId,
    session: Option<&SessionId>,
    name: &str,
) -> sqlx::Result<bool> {
    let done =
        sqlx::query("DELETE FROM env_vars WHERE owner_id = $1 AND session_id IS NOT DISTINCT FROM $2 AND name = $3")
            .bind(owner)
            .bind(session)
            .bind(name)
            .execute(conn)
            .await?;
    Ok(done.rows_affected() > 0)
}

/// Stores `v`, replacing the value at the same place (owner, scope,
/// session, name) in the same statement: an upsert on the unique index of
/// its scope. With `if_newest_key`, only when `v.key_id` is still the
/// newest data key (another process may have rotated since the caller
/// chose it); returns whether it stored.
pub(super) async fn put(
    conn: &mut AnyConnection,
    v: &NewValue<'_>,
    if_newest_key: bool,
) -> sqlx::Result<bool> {
    let (scope, place) = match v.session {
        Some(_) => ("session", "owner_id, session_id, name"),
        None => ("global", "owner_id, name"),
    };
    // `INSERT … SELECT … WHERE`: SQLite needs a `WHERE` before an upsert's
    // `ON CONFLICT` after a `SELECT`, so the plain case has one too.
    let guard = if if_newest_key {
        "$5 = (SELECT max(key_id) FROM keyring)"
    } else {
        "1 = 1"
    };
    let done = sqlx::query(&format!(
        "INSERT INTO env_vars (owner_id, scope, session_id, name, key_id, nonce, ciphertext, updated_at, updated_by)
         SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9 WHERE {guard}
         ON CONFLICT ({place}) WHERE scope = '{scope}' DO UPDATE SET
            key_id = excluded.key_id, nonce = excluded.nonce, ciphertext = excluded.ciphertext,
            updated_at = excluded.updated_at, updated_by = excluded.updated_by"
    ))
    .bind(v.owner)
    .bind(scope)
    .bind(v.session)
    .bind(v.name)
    .bind(v.key_id)
    .bind(v.nonce)
    .bind(v.ciphertext)
    .bind(v.now)
    .bind(v.actor)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() > 0)
}

/// The owner's global values, then the session's: later rows override.
pub(super) async fn effective_rows(
    conn: &mut AnyConnection,
    owner: &UserId,
    session: &SessionId,
) -> sqlx::Result<Vec<StoredValue>> {
    // Each scope through its own unique index (one `WHERE session_id IS
    // NULL OR …` matches neither partial index and reads every value of the
    // owner); ordered outside the `UNION ALL`, where SQLite takes the
    // `here` column (a compound query's own `ORDER BY` takes no
    // expression).
    sqlx::query_as(&format!(
        "SELECT {STORED_COLUMNS} FROM (
             SELECT {STORED_COLUMNS}, 0 AS here FROM env_vars
             WHERE owner_id = $1 AND scope = 'global'
             UNION ALL
             SELECT {STORED_COLUMNS}, 1 AS here FROM env_vars
             WHERE owner_id = $1 AND scope = 'session' AND session_id = $2
         ) AS effective
         ORDER BY here, name"
    ))
    .bind(owner)
    .bind(session)
    .fetch_all(conn)
    .await
}

/// Every value row of the owner, global and per session.
pub(super) async fn rows_of_owner(
    conn: &mut AnyConnection,
    owner: &UserId,
) -> sqlx::Result<Vec<StoredValue>> {
    sqlx::query_as(&format!(
        "SELECT {STORED_COLUMNS} FROM env_vars WHERE owner_id = $1 ORDER BY id"
    ))
    .bind(owner)
    .fetch_all(conn)
    .await
}

/// Up to `limit` rows encrypted under a key other than `key_id`.
pub(super) async fn rows_not_on_key(
    conn: &mut AnyConnection,
    key_id: i64,
    limit: i64,
) -> sqlx::Result<Vec<StoredValue>> {
    sqlx::query_as(&format!(
        "SELECT {STORED_COLUMNS} FROM env_vars WHERE key_id <> $1 ORDER BY id LIMIT $2"
    ))
    .bind(key_id)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Up to `limit` rows with an id above `after`, in id order.
pub(super) async fn rows_after(
    conn: &mut AnyConnection,
    after: i64,
    limit: i64,
) -> sqlx::Result<Vec<StoredValue>> {
    sqlx::query_as(&format!(
        "SELECT {STORED_COLUMNS} FROM env_vars WHERE id > $1 ORDER BY id LIMIT $2"
    ))
    .bind(after)
    .bind(limit)
    .fetch_all(conn)
    .await
}

pub(super) async fn count_all(conn: &mut AnyConnection) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT count(*) FROM env_vars")
        .fetch_one(conn)
        .await
}

pub(super) async fn count_not_on_key(conn: &mut AnyConnection, key_id: i64) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT count(*) FROM env_vars WHERE key_id <> $1")
        .bind(key_id)
        .fetch_one(conn)
        .await
}

pub(super) async fn replace_ciphertext(
    conn: &mut AnyConnection,
    id: i64,
    key_id: i64,
    nonce: &[u8],
    ciphertext: &[u8],
) -> sqlx::Result<()> {
    sqlx::query("UPDATE env_vars SET key_id = $1, nonce = $2, ciphertext = $3 WHERE id = $4")
        .bind(key_id)
        .bind(nonce)
        .bind(ciphertext)
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Names and provenance of an owner's values, as listed to people.
#[derive(sqlx::FromRow)]
pub(super) struct InfoRow {
    pub name: String,
    pub session_id: Option<SessionId>,
    pub updated_at: i64,
    pub updated_by: String,
    pub key_id: i64,
}

pub(super) async fn list_info(
    conn: &mut AnyConnection,
    owner: &UserId,
) -> sqlx::Result<Vec<InfoRow>> {
    sqlx::query_as(
        "SELECT e.name, e.session_id, e.updated_at, u.name AS updated_by, e.key_id
         FROM env_vars e JOIN users u ON u.id = e.updated_by
         WHERE e.owner_id = $1 ORDER BY e.name, e.session_id IS NOT NULL, e.session_id",
    )
    .bind(owner)
    .fetch_all(conn)
    .await
}

pub(super) async fn list_info_page(
    conn: &mut AnyConnection,
    owner: &UserId,
    offset: i64,
    limit: i64,
) -> sqlx::Result<(Vec<InfoRow>, i64)> {
    let total: i64 = sqlx::query_scalar("SELECT count(*) FROM env_vars WHERE owner_id = $1")
        .bind(owner)
        .fetch_one(&mut *conn)
        .await?;
    let rows = sqlx::query_as(
        "SELECT e.name, e.session_id, e.updated_at, u.name AS updated_by, e.key_id
         FROM env_vars e JOIN users u ON u.id = e.updated_by
         WHERE e.owner_id = $1 ORDER BY e.name, e.session_id IS NOT NULL, e.session_id
         LIMIT $2 OFFSET $3",
    )
    .bind(owner)
    .bind(limit)
    .bind(offset)
    .fetch_all(conn)
    .await?;
    Ok((rows, total))
}

/// Whether `owner` has a global value named `name`.
pub(super) async fn has_global(
    conn: &mut AnyConnection,
    owner: &UserId,
    name: &str,
) -> sqlx::Result<bool> {
    let found: Option<i64> = sqlx::query_scalar(
        "SELECT 1 FROM env_vars WHERE owner_id = $1 AND session_id IS NULL AND name = $2",
    )
    .bind(owner)
    .bind(name)
    .fetch_optional(conn)
    .await?;
    Ok(found.is_some())
}
