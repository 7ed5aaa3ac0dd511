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
