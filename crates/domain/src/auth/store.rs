//! SQL of users and API tokens.

use sqlx::AnyConnection;

use super::{Role, User};
use crate::db::Dialect;
use crate::ids::{TokenId, UserId};

pub(super) async fn insert_user(
    conn: &mut AnyConnection,
    user: &User,
    password_hash: &str,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO users (id, name, role, password_hash, disabled, created_at) VALUES ($1, $2, $3, $4, 0, $5)",
    )
    .bind(&user.id)
    .bind(&user.name)
    .bind(user.role)
    .bind(password_hash)
    .bind(user.created_at)
    .execute(conn)
    .await?;
    Ok(())
}

pub(super) async fn set_password_hash(
    conn: &mut AnyConnection,
    id: &UserId,
    password_hash: &str,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE users SET password_hash = $1 WHERE id = $2")
        .bind(password_hash)
        .bind(id)
        .execute(&mut *conn)
        .await?;
    // A new password ends every browser session of the user: whoever knew
    // the old one (or holds a cookie got with it) is out. The session
    // record keeps the user id under `user_id` (see `src/web/auth.rs`).
    let sql = Dialect::of(conn).sql().delete_web_sessions_of_user();
    sqlx::query(sql).bind(id).execute(&mut *conn).await?;
    super::bump_epoch(conn).await
}

const USER_COLUMNS: &str = "id, name, role, disabled, created_at";

pub(super) async fn find_user_by_name(
    conn: &mut AnyConnection,
    name: &str,
) -> sqlx::Result<Option<User>> {
    sqlx::query_as(&format!("SELECT {USER_COLUMNS} FROM users WHERE name = $1"))
        .bind(name)
        .fetch_optional(conn)
        .await
}

pub(super) async fn list_users(conn: &mut AnyConnection) -> sqlx::Result<Vec<User>> {
    sqlx::query_as(&format!("SELECT {USER_COLUMNS} FROM users ORDER BY name"))
        .fetch_all(conn)
        .await
}

pub(super) async fn count_users(conn: &mut AnyConnection) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT count(*) FROM users")
        .fetch_one(conn)
        .await
}

pub(super) async fn insert_api_token(
    conn: &mut AnyConnection,
    id: &TokenId,
    user: &UserId,
    hash: &[u8],
    scopes: &str,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO api_tokens (id, user_id, token_hash, scopes, created_at) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(id)
    .bind(user)
    .bind(hash)
    .bind(scopes)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// Marks a live token revoked; false if none was live under that id.
pub(super) async fn revoke_api_token(
    conn: &mut AnyConnection,
    id: &TokenId,
    now: i64,
) -> sqlx::Result<bool> {
    let done =
        sqlx::query("UPDATE api_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
            .bind(now)
            .bind(id)
            .execute(&mut *conn)
            .await?;
    super::bump_epoch(conn).await?;
    Ok(done.rows_affected() == 1)
}

/// A live API token's owner, role and scopes, looked up by hash.
#[derive(sqlx::FromRow)]
pub(super) struct TokenOwner {
    pub user_id: UserId,
    pub role: Role,
    pub scopes: String,
}

pub(super) async fn find_live_api_token(
    conn: &mut AnyConnection,
    hash: &[u8],
) -> sqlx::Result<Option<TokenOwner>> {
    sqlx::query_as(
        "SELECT u.id AS user_id, u.role, t.scopes FROM api_tokens t JOIN users u ON u.id = t.user_id
         WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND u.disabled = 0",
    )
    .bind(hash)
    .fetch_optional(conn)
    .await
}

/// A token as operators list it.
#[derive(sqlx::FromRow, serde::Serialize)]
pub struct TokenRow {
    pub id: TokenId,
    pub user: String,
    pub scopes: String,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
}

pub(super) async fn list_api_tokens(conn: &mut AnyConnection) -> sqlx::Result<Vec<TokenRow>> {
    sqlx::query_as(
        "SELECT t.id, u.name AS user, t.scopes, t.created_at, t.revoked_at
         FROM api_tokens t JOIN users u ON u.id = t.user_id ORDER BY t.created_at",
    )
    .fetch_all(conn)
    .await
}

pub(super) async fn find_user_by_id(
    conn: &mut AnyConnection,
    id: &UserId,
) -> sqlx::Result<Option<User>> {
    sqlx::query_as(&format!("SELECT {USER_COLUMNS} FROM users WHERE id = $1"))
        .bind(id)
        .fetch_optional(conn)
        .await
}

pub(super) async fn password_hash(conn: &mut AnyConnection, id: &UserId) -> sqlx::Result<String> {
    sqlx::query_scalar("SELECT password_hash FROM users WHERE id = $1")
        .bind(id)
        .fetch_one(conn)
        .await
}

pub(super) async fn set_disabled(
    conn: &mut AnyConnection,
    id: &UserId,
    disabled: bool,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE users SET disabled = $1 WHERE id = $2")
        .bind(crate::db::Flag(disabled))
        .bind(id)
        .execute(&mut *conn)
        .await?;
    super::bump_epoch(conn).await
}

pub(super) async fn set_role(
    conn: &mut AnyConnection,
    id: &UserId,
    role: Role,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE users SET role = $1 WHERE id = $2")
        .bind(role)
        .bind(id)
        .execute(&mut *conn)
        .await?;
    super::bump_epoch(conn).await
}

/// How many active admins there are, counted under the admins' lock
/// (PostgreSQL), so two concurrent demotions cannot both see a second admin.
pub(super) async fn active_admins(conn: &mut AnyConnection) -> sqlx::Result<i64> {
    crate::db::lock(conn, crate::db::Lock::Admins).await?;
    sqlx::query_scalar("SELECT count(*) FROM users WHERE role = 'admin' AND disabled = 0")
        .fetch_one(conn)
        .await
}
