//! Agent sessions: one conversation, its creator, and its agent token.

pub mod api;
mod store;

use secrecy::SecretString;
use serde::Serialize;
use sqlx::SqliteConnection;

use crate::auth::tokens::{self, AGENT_TOKEN_PREFIX};
use crate::clock;
use crate::error::{AppError, AppResult};
use crate::ids::{SessionId, UserId};

const MAX_TITLE_CHARS: usize = 200;

/// A session as stored.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Session {
    pub id: SessionId,
    pub creator_id: UserId,
    pub title: String,
    pub created_at: i64,
    pub archived_at: Option<i64>,
}

/// A session just created, with its agent token (shown this once).
pub struct NewSession {
    pub session: Session,
    pub agent_token: SecretString,
}

/// Checks a title: 1–200 characters, no control characters. Empty means a
/// dated default.
pub fn parse_title(title: Option<&str>) -> AppResult<String> {
    let title = title.map(str::trim).unwrap_or_default();
    if title.is_empty() {
        return Ok(format!("Session of {}", clock::rfc3339(clock::now_ms())));
    }
    if title.chars().count() > MAX_TITLE_CHARS || title.chars().any(char::is_control) {
        return Err(AppError::invalid(
            "invalid_title",
            format!("a title has at most {MAX_TITLE_CHARS} characters and no control characters"),
        ));
    }
    Ok(title.to_owned())
}

/// Creates a session owned by `creator` and mints its agent token.
pub async fn create_session(
    conn: &mut SqliteConnection,
    creator: &UserId,
    title: String,
) -> AppResult<NewSession> {
    let session = Session {
        id: SessionId::generate(),
        creator_id: creator.clone(),
        title,
        created_at: clock::now_ms(),
        archived_at: None,
    };
    let minted = tokens::generate(AGENT_TOKEN_PREFIX);
    store::insert_session(conn, &session).await?;
    store::insert_agent_token(conn, &session.id, &minted.hash, session.created_at).await?;
    Ok(NewSession {
        session,
        agent_token: minted.token,
    })
}

/// The session `id`, or 404.
pub async fn get_session(conn: &mut SqliteConnection, id: &SessionId) -> AppResult<Session> {
    store::find_session(conn, id)
        .await?
        .ok_or(AppError::NotFound("session"))
}

/// The session an agent token belongs to, if the token is live.
pub async fn find_live_agent_token(
    conn: &mut SqliteConnection,
    hash: &[u8],
) -> AppResult<Option<SessionId>> {
    Ok(store::find_live_agent_token(conn, hash).await?)
}

/// Marks a session archived (its agent token stops working); 404 if unknown.
pub async fn mark_archived(conn: &mut SqliteConnection, id: &SessionId, now: i64) -> AppResult<()> {
    if store::mark_archived(conn, id, now).await? {
        Ok(())
    } else {
        Err(AppError::NotFound("session"))
    }
}

/// The sessions `user` created, newest first, with their pending widget counts.
pub async fn list_sessions(
    conn: &mut SqliteConnection,
    user: &UserId,
) -> AppResult<Vec<(Session, i64)>> {
    Ok(store::overview(conn, user).await?)
}

/// The session `id` if `principal` is its host: an API token with the
/// `sessions` scope of the session's creator. Anyone else is told it does
/// not exist (an agent token is refused outright).
pub async fn as_host(
    state: &crate::AppState,
    principal: &crate::auth::Principal,
    id: &str,
) -> AppResult<Session> {
    let user = principal.user_with_scope(crate::auth::tokens::TokenScope::Sessions)?;
    let id = SessionId::parse(id).ok_or(AppError::NotFound("session"))?;
    let session = get_session(&mut *state.db.read.acquire().await?, &id).await?;
    if &session.creator_id != user {
        return Err(AppError::NotFound("session"));
    }
    Ok(session)
}

/// The session `id` if `principal` is its agent or its host.
pub async fn as_agent_or_host(
    state: &crate::AppState,
    principal: &crate::auth::Principal,
    id: &str,
) -> AppResult<Session> {
    match principal {
        crate::auth::Principal::Agent { session_id } => {
            if SessionId::parse(id).as_ref() != Some(session_id) {
                return Err(AppError::NotFound("session"));
            }
            get_session(&mut *state.db.read.acquire().await?, session_id).await
        }
        crate::auth::Principal::User { .. } => as_host(state, principal, id).await,
    }
}
