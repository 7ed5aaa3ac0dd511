//! Who is calling the API: a bearer token resolved to a user with scopes or
//! a session's agent (the server reads it from each request).

use super::Role;
use super::store;
use super::tokens::{self, AGENT_TOKEN_PREFIX, API_TOKEN_PREFIX, TokenScope, TokenScopes};
use crate::Core;
use crate::error::{Error, Result};
use crate::ids::{SessionId, UserId};
use crate::sessions;

/// The authenticated caller of an API request.
#[derive(Debug, Clone)]
pub enum Principal {
    /// A user's API token, limited to its scopes.
    User {
        user_id: UserId,
        role: Role,
        scopes: TokenScopes,
    },
    /// A session's agent token: that session only, never a value.
    Agent { session_id: SessionId },
}

pub fn unauthenticated(code: &'static str, message: &str) -> Error {
    Error::Unauthenticated {
        code,
        message: message.to_owned(),
    }
}

impl Principal {
    /// The principal of a bearer token, checked now: unknown, revoked, or
    /// belonging to a disabled user or an archived session is `401`. A
    /// known token is answered from the auth cache while the auth epoch
    /// has not moved (see `cache.rs`).
    pub async fn resolve(state: &Core, token: &str) -> Result<Self, Error> {
        let invalid = || {
            unauthenticated(
                "invalid_token",
                "the token is unknown or revoked, or its user or session is no longer active",
            )
        };
        if !token.starts_with(API_TOKEN_PREFIX) && !token.starts_with(AGENT_TOKEN_PREFIX) {
            return Err(invalid());
        }
        let hash = tokens::hash(token);
        let epoch = state.auth_cache.epoch(&state.db).await;
        if let Some(principal) = state.auth_cache.token(epoch, &hash) {
            return Ok(principal);
        }
        let mut conn = state.db.read.acquire().await?;
        let principal = if token.starts_with(API_TOKEN_PREFIX) {
            let owner = store::find_live_api_token(&mut conn, &hash)
                .await?
                .ok_or_else(invalid)?;
            // Scopes were validated when minted; a stored list that no longer
            // parses is treated as no token at all.
            let scopes = TokenScopes::parse(&owner.scopes).map_err(|_| invalid())?;
            Self::User {
                user_id: owner.user_id,
                role: owner.role,
                scopes,
            }
        } else {
            let session_id = sessions::find_live_agent_token(&mut conn, &hash)
                .await?
                .ok_or_else(invalid)?;
            Self::Agent { session_id }
        };
        state.auth_cache.put_token(epoch, hash, principal.clone());
        Ok(principal)
    }
}

impl Principal {
    /// The user behind an API token that carries `scope`; 403 otherwise.
    pub fn user_with_scope(&self, scope: TokenScope) -> Result<&UserId> {
        match self {
            Self::User {
                user_id, scopes, ..
            } if scopes.contains(scope) => Ok(user_id),
            Self::User { .. } => Err(Error::Forbidden(format!(
                "this needs an API token with the `{scope}` scope; mint one with \
                 `widgetd token create --user NAME --scope {scope}`"
            ))),
            Self::Agent { .. } => Err(Error::Forbidden(format!(
                "agent tokens cannot do this; it needs a user's API token with the `{scope}` scope"
            ))),
        }
    }
}
