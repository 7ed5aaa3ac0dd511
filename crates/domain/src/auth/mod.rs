//! People and their credentials: users with argon2id passwords and roles,
//! API tokens with scopes, and the `Principal` every API request resolves to.

pub mod browser;
pub mod cache;
pub mod passwords;
pub mod principal;
mod store;
pub mod tokens;

use secrecy::SecretString;
use serde::Serialize;
use sqlx::AnyConnection;

pub use cache::{AuthCache, bump_epoch};
pub use principal::Principal;
pub use store::TokenRow;
use tokens::{API_TOKEN_PREFIX, TokenScopes};

use crate::clock;
use crate::error::{Error, Result};
use crate::ids::{TokenId, UserId};

/// What a user may administer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Admin,
    Member,
}

crate::db::text_enum!(Role { Admin => "admin", Member => "member" });

/// A user account as the rest of the system sees it (no password hash).
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct User {
    pub id: UserId,
    pub name: String,
    pub role: Role,
    #[sqlx(try_from = "crate::db::Flag")]
    pub disabled: bool,
    pub created_at: i64,
}

/// Longest user name, in bytes (names are ASCII).
pub const MAX_NAME_LEN: usize = 64;

/// Checks a user name: 1–64 characters of letters, digits, `.`, `_`, `-`, `@`.
pub fn parse_user_name(name: &str) -> Result<&str> {
    let ok = (1..=MAX_NAME_LEN).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-@".contains(c));
    if ok {
        Ok(name)
    } else {
        Err(Error::invalid(
            "invalid_user_name",
            "user names have 1–64 characters: letters, digits, `.`, `_`, `-`, `@`",
        ))
    }
}

/// Creates a user. The name must be free and the password pass the policy.
pub async fn create_user(
    conn: &mut AnyConnection,
    name: &str,
    role: Role,
    password: SecretString,
) -> Result<User> {
    let name = parse_user_name(name)?;
    passwords::check_policy(&password)?;
    if store::find_user_by_name(conn, name).await?.is_some() {
        return Err(Error::Conflict {
            code: "user_exists",
            message: format!("a user named `{name}` already exists"),
        });
    }
    let hash = hash_off_thread(password).await?;
    let user = User {
        id: UserId::generate(),
        name: name.to_owned(),
        role,
        disabled: false,
        created_at: clock::now_ms(),
    };
    store::insert_user(conn, &user, &hash).await?;
    Ok(user)
}

/// Sets a user's password (policy-checked) and ends all their browser
/// sessions.
pub async fn set_password(
    conn: &mut AnyConnection,
    name: &str,
    password: SecretString,
) -> Result<()> {
    passwords::check_policy(&password)?;
    let user = find_user(conn, name).await?;
    let hash = hash_off_thread(password).await?;
    store::set_password_hash(conn, &user.id, &hash).await?;
    Ok(())
}

async fn hash_off_thread(password: SecretString) -> Result<String> {
    passwords::hash_async(password).await
}

/// The user named `name`, or a 404 naming the problem.
pub async fn find_user(conn: &mut AnyConnection, name: &str) -> Result<User> {
    store::find_user_by_name(conn, name)
        .await?
        .ok_or(Error::NotFound("user"))
}

/// The user named `name`, if any.
pub async fn find_user_by_name(conn: &mut AnyConnection, name: &str) -> Result<Option<User>> {
    Ok(store::find_user_by_name(conn, name).await?)
}

pub async fn find_user_by_id(conn: &mut AnyConnection, id: &UserId) -> Result<Option<User>> {
    Ok(store::find_user_by_id(conn, id).await?)
}

/// The user `id` as of this request, from the auth cache when the auth
/// epoch has not moved (a disable or a role change moves it).
pub async fn current_user(state: &crate::Core, id: &UserId) -> Result<Option<User>> {
    let epoch = state.auth_cache.epoch(&state.db).await;
    if let Some(user) = state.auth_cache.user(epoch, id) {
        return Ok(Some(user));
    }
    let user = store::find_user_by_id(&mut *state.db.read.acquire().await?, id).await?;
    if let Some(user) = &user {
        state.auth_cache.put_user(epoch, user.clone());
    }
    Ok(user)
}

/// The user named `name` with the PHC string of their password, for login.
pub async fn find_user_with_hash(
    conn: &mut AnyConnection,
    name: &str,
) -> Result<Option<(User, String)>> {
    let Some(user) = store::find_user_by_name(conn, name).await? else {
        return Ok(None);
    };
    let hash = store::password_hash(conn, &user.id).await?;
    Ok(Some((user, hash)))
}

pub async fn list_users(conn: &mut AnyConnection) -> Result<Vec<User>> {
    Ok(store::list_users(conn).await?)
}

pub async fn count_users(conn: &mut AnyConnection) -> Result<i64> {
    Ok(store::count_users(conn).await?)
}

/// Mints an API token for `user`. The token is returned once and only its
/// hash is kept.
pub async fn create_api_token(
    conn: &mut AnyConnection,
    user: &UserId,
    scopes: &TokenScopes,
) -> Result<(TokenId, SecretString)> {
    let id = TokenId::generate();
    let minted = tokens::generate(API_TOKEN_PREFIX);
    store::insert_api_token(
        conn,
        &id,
        user,
        &minted.hash,
        &scopes.to_string(),
        clock::now_ms(),
    )
    .await?;
    Ok((id, minted.token))
}

/// Revokes the token with this id (as printed by `token create`/`token list`).
pub async fn revoke_api_token(conn: &mut AnyConnection, id: &TokenId) -> Result<()> {
    if store::revoke_api_token(conn, id, clock::now_ms()).await? {
        Ok(())
    } else {
        Err(Error::NotFound("live token"))
    }
}

pub async fn list_api_tokens(conn: &mut AnyConnection) -> Result<Vec<TokenRow>> {
    Ok(store::list_api_tokens(conn).await?)
}

/// Enables or disables a user. A disabled user's browser sessions, API
/// tokens and sessions' agent tokens stop working at once. The last active
/// admin cannot be disabled.
pub async fn set_disabled(conn: &mut AnyConnection, name: &str, disabled: bool) -> Result<User> {
    let user = find_user(conn, name).await?;
    if disabled
        && user.role == Role::Admin
        && !user.disabled
        && store::active_admins(conn).await? <= 1
    {
        return Err(last_admin());
    }
    store::set_disabled(conn, &user.id, disabled).await?;
    Ok(User { disabled, ..user })
}

/// Changes a user's role; the last active admin keeps theirs.
pub async fn set_role(conn: &mut AnyConnection, name: &str, role: Role) -> Result<User> {
    let user = find_user(conn, name).await?;
    if role == Role::Member
        && user.role == Role::Admin
        && !user.disabled
        && store::active_admins(conn).await? <= 1
    {
        return Err(last_admin());
    }
    store::set_role(conn, &user.id, role).await?;
    Ok(User { role, ..user })
}

fn last_admin() -> Error {
    Error::Conflict {
        code: "last_admin",
        message: "this is the last active admin; make someone else admin first".into(),
    }
}
