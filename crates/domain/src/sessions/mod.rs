//! Agent sessions: one conversation, its creator, and its agent token.

mod agent_token;
mod elicitation;
mod store;

pub use agent_token::{Revoked, revoke_agent_token};
pub use elicitation::Elicitation;

use secrecy::SecretString;
use serde::Serialize;
use sqlx::AnyConnection;

use crate::auth::tokens::{self, AGENT_TOKEN_PREFIX};
use crate::clock;
use crate::error::{Error, Result};
use crate::ids::{SessionId, UserId};

const MAX_TITLE_CHARS: usize = 200;

/// What people other than the creator may do with a session.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Sharing {
    /// Nothing: the session does not exist for them.
    #[default]
    None,
    /// Read the transcript and follow it live.
    View,
    /// Also answer (submit or dismiss) its widgets.
    Prompt,
}

crate::db::text_enum!(Sharing { None => "none", View => "view", Prompt => "prompt" });

impl Sharing {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::View => "view",
            Self::Prompt => "prompt",
        }
    }
}

/// The columns a [`Session`] is read from.
pub const COLUMNS: &str = "id, creator_id, title, created_at, archived_at, others_can";

/// A session as stored.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Session {
    pub id: SessionId,
    pub creator_id: UserId,
    pub title: String,
    pub created_at: i64,
    pub archived_at: Option<i64>,
    pub others_can: Sharing,
}

/// A session just created, with its agent token (shown this once).
pub struct NewSession {
    pub session: Session,
    pub agent_token: SecretString,
}

/// Checks a title: 1–200 characters, no control characters. Empty means a
/// dated default.
pub fn parse_title(title: Option<&str>) -> Result<String> {
    let title = title.map(str::trim).unwrap_or_default();
    if title.is_empty() {
        return Ok(format!("Session of {}", clock::readable(clock::now_ms())));
    }
    if title.chars().count() > MAX_TITLE_CHARS || title.chars().any(char::is_control) {
        return Err(Error::invalid(
            "invalid_title",
            format!("a title has at most {MAX_TITLE_CHARS} characters and no control characters"),
        ));
    }
    Ok(title.to_owned())
}

/// Creates a session owned by `creator` and mints its agent token.
pub async fn create_session(
    conn: &mut AnyConnection,
    creator: &UserId,
    title: String,
) -> Result<NewSession> {
    let session = Session {
        id: SessionId::generate(),
        creator_id: creator.clone(),
        title,
        created_at: clock::now_ms(),
        archived_at: None,
        others_can: Sharing::None,
    };
    let minted = tokens::generate(AGENT_TOKEN_PREFIX);
    store::insert_session(conn, &session).await?;
    store::insert_agent_token(conn, &session.id, &minted.hash, session.created_at).await?;
    Ok(NewSession {
        session,
        agent_token: minted.token,
    })
}

/// Narrows the MCP elicitation modes of a session (set at its creation).
pub async fn set_elicitation(
    conn: &mut AnyConnection,
    id: &SessionId,
    modes: Elicitation,
) -> Result<()> {
    Ok(store::set_elicitation(conn, id, modes).await?)
}

/// The MCP elicitation modes a session allows: its own setting, or `url`
/// when it has none (form mode only where the host opted in); the
/// daemon's setting narrows it further.
pub async fn elicitation(conn: &mut AnyConnection, id: &SessionId) -> Result<Elicitation> {
    Ok(store::elicitation(conn, id).await?.unwrap_or_default())
}

/// The session `id`, or 404.
pub async fn get_session(conn: &mut AnyConnection, id: &SessionId) -> Result<Session> {
    store::find_session(conn, id)
        .await?
        .ok_or(Error::NotFound("session"))
}

/// The session an agent token belongs to, if the token is live.
pub async fn find_live_agent_token(
    conn: &mut AnyConnection,
    hash: &[u8],
) -> Result<Option<SessionId>> {
    Ok(store::find_live_agent_token(conn, hash).await?)
}

/// Marks a session archived (its agent token stops working); 404 if unknown.
pub async fn mark_archived(conn: &mut AnyConnection, id: &SessionId, now: i64) -> Result<()> {
    if store::mark_archived(conn, id, now).await? {
        Ok(())
    } else {
        Err(Error::NotFound("session"))
    }
}

/// A session as `widgetd session list` shows it.
#[derive(Debug, Serialize, sqlx::FromRow)]
pub struct SessionSummary {
    pub id: SessionId,
    pub owner: String,
    pub title: String,
    #[serde(serialize_with = "clock::serialize_rfc3339")]
    pub created_at: i64,
    #[serde(serialize_with = "clock::serialize_rfc3339_opt")]
    pub archived_at: Option<i64>,
    /// Widgets waiting for an answer.
    pub pending: i64,
}

/// Every session, newest first, for the operator.
pub async fn list_all(conn: &mut AnyConnection) -> Result<Vec<SessionSummary>> {
    Ok(store::all(conn).await?)
}

/// How many agent tokens of `session` work now (0 once revoked).
pub async fn count_agent_tokens(conn: &mut AnyConnection, session: &SessionId) -> Result<i64> {
    Ok(store::count_agent_tokens(conn, session).await?)
}

/// The sessions `user` created, newest first, with their pending widget counts.
pub async fn list_sessions(conn: &mut AnyConnection, user: &UserId) -> Result<Vec<(Session, i64)>> {
    Ok(store::overview(conn, user).await?)
}

/// What the session list shows: archived sessions or the others, whose
/// title holds `search` (any case) or whose id is `search`.
pub struct ListQuery<'a> {
    pub archived: bool,
    pub search: &'a str,
    pub offset: i64,
    pub limit: i64,
}

/// A session on the list: with its pending widget count and when anything
/// last happened in it (a line in the transcript, a widget ending).
pub struct Listed {
    pub session: Session,
    pub pending: i64,
    pub activity: i64,
}

/// The sessions `user` may read, most recent activity first, one page:
/// (the page, how many match in all).
pub async fn list_page(
    conn: &mut AnyConnection,
    user: &UserId,
    query: &ListQuery<'_>,
) -> Result<(Vec<Listed>, i64)> {
    Ok(store::page(conn, user, query).await?)
}

/// The sharing of a session: `others_can` and the per-user grants by name.
pub async fn sharing(
    conn: &mut AnyConnection,
    session: &Session,
) -> Result<(Sharing, Vec<(String, Sharing)>)> {
    Ok((session.others_can, store::grants(conn, &session.id).await?))
}

/// The grant of `user` on `session`, if any.
pub async fn grant_of(
    conn: &mut AnyConnection,
    session: &SessionId,
    user: &UserId,
) -> Result<Sharing> {
    Ok(store::grant_of(conn, session, user)
        .await?
        .unwrap_or_default())
}

/// Sets `others_can` and replaces one user's grant (`Sharing::None` removes it).
pub async fn set_sharing(
    conn: &mut AnyConnection,
    session: &SessionId,
    others_can: Sharing,
    grants: &[(UserId, Sharing)],
) -> Result<()> {
    store::set_others_can(conn, session, others_can).await?;
    for (user, access) in grants {
        store::set_grant(conn, session, user, *access).await?;
    }
    Ok(())
}

/// Changes who else may see or answer `session`: `others_can` (if given)
/// and per-user grants by user name (`none` removes one). One transaction,
/// audited as `session.share`. Returns the sharing as it now is.
pub async fn update_sharing(
    state: &crate::Core,
    session: &Session,
    others_can: Option<Sharing>,
    grants: &[(String, Sharing)],
    actor: &crate::audit::Actor,
    client: &crate::audit::ClientAddr,
) -> Result<(Sharing, Vec<(String, Sharing)>)> {
    let mut tx = state.db.begin_write().await?;
    let mut resolved = Vec::with_capacity(grants.len());
    for (name, access) in grants {
        let Some(user) = crate::auth::find_user_by_name(&mut tx, name).await? else {
            return Err(Error::invalid(
                "unknown_user",
                format!("there is no user named `{name}`"),
            ));
        };
        if user.id == session.creator_id {
            return Err(Error::invalid(
                "invalid_grant",
                "the creator always has full access",
            ));
        }
        resolved.push((user.id, *access));
    }
    // Read again inside the transaction: a concurrent change is not undone.
    let current = get_session(&mut tx, &session.id).await?.others_can;
    let others_can = others_can.unwrap_or(current);
    set_sharing(&mut tx, &session.id, others_can, &resolved).await?;
    let mut detail = format!("others_can={}", others_can.as_str());
    for (name, access) in grants {
        detail.push_str(&format!("; {name}={}", access.as_str()));
    }
    let entry = crate::audit::Entry {
        action: "session.share",
        session: Some(&session.id),
        detail: Some(detail),
        ..Default::default()
    };
    crate::audit::append(&mut tx, actor, client, entry).await?;
    let grants = store::grants(&mut tx, &session.id).await?;
    tx.commit().await?;
    Ok((others_can, grants))
}
