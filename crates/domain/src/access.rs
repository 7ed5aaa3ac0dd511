//! The one authorization layer. Every route, page, event stream and MCP
//! tool that touches a session asks [`authorize`] what the caller may do,
//! so a new endpoint cannot forget a rule: it names what it needs and gets
//! the session or a refusal.
//!
//! A caller who may not even see the session is told it does not exist
//! (404); one who may see it but not do this is refused (403).

use sqlx::AnyConnection;

use crate::Core;
use crate::auth::Principal;
use crate::auth::tokens::{TokenScope, TokenScopes};
use crate::error::{Error, Result};
use crate::ids::{SessionId, UserId};
use crate::sessions::{self, Session, Sharing};

/// Who is asking.
#[derive(Debug, Clone, Copy)]
pub enum Caller<'a> {
    /// A session's agent token.
    Agent(&'a SessionId),
    /// A user's API token with its scopes (the agent host, scripts).
    Token {
        user: &'a UserId,
        scopes: &'a TokenScopes,
    },
    /// A person signed in with the browser.
    Person(&'a UserId),
}

impl<'a> From<&'a Principal> for Caller<'a> {
    fn from(principal: &'a Principal) -> Self {
        match principal {
            Principal::Agent { session_id } => Caller::Agent(session_id),
            Principal::User {
                user_id, scopes, ..
            } => Caller::Token {
                user: user_id,
                scopes,
            },
        }
    }
}

/// What the caller wants to do with the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Read the transcript, its widgets and its events.
    Watch,
    /// Create widgets and post transcript lines: the agent or its host.
    Act,
    /// Drain and acknowledge prompts, archive: the host only.
    Host,
    /// Submit or dismiss widgets: people with `prompt` access.
    Answer,
    /// Change who else may see or answer: the creator.
    Share,
    /// Store or delete the creator's values for this session.
    WriteEnv,
    /// Read decrypted values: the creator's `env:read` token only.
    ReadEnv,
}

/// How much a person may do with a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    None,
    View,
    Prompt,
    Owner,
}

impl From<Sharing> for Access {
    fn from(sharing: Sharing) -> Self {
        match sharing {
            Sharing::None => Access::None,
            Sharing::View => Access::View,
            Sharing::Prompt => Access::Prompt,
        }
    }
}

/// A person's access: owner, or the higher of `others_can` and their grant.
pub async fn person_access(
    conn: &mut AnyConnection,
    session: &Session,
    user: &UserId,
) -> Result<Access> {
    let grant = if &session.creator_id == user {
        Sharing::None
    } else {
        sessions::grant_of(conn, &session.id, user).await?
    };
    Ok(access_of(session, user, grant))
}

/// A person's access given their grant on the session.
fn access_of(session: &Session, user: &UserId, grant: Sharing) -> Access {
    if &session.creator_id == user {
        return Access::Owner;
    }
    Access::from(session.others_can.max(grant))
}

fn forbidden(message: &str) -> Error {
    Error::Forbidden(message.to_owned())
}

fn token_scope(need: Need) -> Option<TokenScope> {
    match need {
        Need::ReadEnv => Some(TokenScope::EnvRead),
        Need::WriteEnv => Some(TokenScope::EnvWrite),
        Need::Answer => None,
        Need::Watch | Need::Act | Need::Host | Need::Share => Some(TokenScope::Sessions),
    }
}

fn person_needs(need: Need) -> Option<Access> {
    match need {
        Need::Watch => Some(Access::View),
        Need::Answer => Some(Access::Prompt),
        Need::Share | Need::WriteEnv => Some(Access::Owner),
        Need::Act | Need::Host | Need::ReadEnv => None,
    }
}

/// Checks `need` for `caller` on `session`, inside any connection.
pub async fn check(
    conn: &mut AnyConnection,
    caller: Caller<'_>,
    session: &Session,
    need: Need,
) -> Result<()> {
    let grant = match caller {
        Caller::Person(user) if user != &session.creator_id => {
            sessions::grant_of(conn, &session.id, user).await?
        }
        _ => Sharing::None,
    };
    decide(caller, session, need, grant)
}

/// Decides `need` for `caller` on `session`; `grant` is a person's own
/// grant on it (`Sharing::None` for anyone else).
fn decide(caller: Caller<'_>, session: &Session, need: Need, grant: Sharing) -> Result<()> {
    let missing = || Error::NotFound("session");
    match caller {
        Caller::Agent(own) if own != &session.id => Err(missing()),
        Caller::Agent(_) => match need {
            Need::Watch | Need::Act => Ok(()),
            Need::ReadEnv => Err(forbidden("agent tokens can never read values")),
            _ => Err(forbidden(
                "agent tokens cannot do this; it needs the session creator",
            )),
        },
        Caller::Token { user, .. } if user != &session.creator_id => Err(missing()),
        Caller::Token { scopes, .. } => match token_scope(need) {
            Some(scope) if scopes.contains(scope) => Ok(()),
            Some(scope) => Err(Error::Forbidden(format!(
                "this needs an API token with the `{scope}` scope; mint one with \
                 `widgetd token create --user NAME --scope {scope}`"
            ))),
            None => Err(forbidden(
                "widgets are answered by a person, in the browser",
            )),
        },
        Caller::Person(user) => {
            let access = access_of(session, user, grant);
            if access == Access::None {
                return Err(missing());
            }
            match person_needs(need) {
                Some(needed) if access >= needed => Ok(()),
                Some(Access::Prompt) => Err(forbidden(
                    "you may read this session but not answer its widgets",
                )),
                _ => Err(forbidden("only the session's creator may do this")),
            }
        }
    }
}

/// The session `id` if `caller` may do `need` with it. The session and a
/// person's grant come from the auth cache while the auth epoch has not
/// moved (archiving and every sharing change move it).
pub async fn authorize(state: &Core, caller: Caller<'_>, id: &str, need: Need) -> Result<Session> {
    let id = SessionId::parse(id).ok_or(Error::NotFound("session"))?;
    let cache = &state.auth_cache;
    let epoch = cache.epoch(&state.db).await;
    let session = match cache.session(epoch, &id) {
        Some(session) => session,
        None => {
            let session = sessions::get_session(&mut *state.db.read.acquire().await?, &id).await?;
            cache.put_session(epoch, session.clone());
            session
        }
    };
    let person = match caller {
        Caller::Person(user) if user != &session.creator_id => Some(user),
        _ => None,
    };
    let grant = match person {
        Some(user) => match cache.grant(epoch, &id, user) {
            Some(grant) => grant,
            None => {
                let grant =
                    sessions::grant_of(&mut *state.db.read.acquire().await?, &id, user).await?;
                cache.put_grant(epoch, id.clone(), user.clone(), grant);
                grant
            }
        },
        None => Sharing::None,
    };
    decide(caller, &session, need, grant)?;
    Ok(session)
}
