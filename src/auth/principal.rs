//! Who is calling the API: resolved from `Authorization: Bearer …` once per
//! request, before any handler logic runs.

use axum::extract::{FromRequestParts, OptionalFromRequestParts};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

use super::Role;
use super::store;
use super::tokens::{self, AGENT_TOKEN_PREFIX, API_TOKEN_PREFIX, TokenScope, TokenScopes};
use crate::AppState;
use crate::error::{AppError, AppResult};
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

fn unauthenticated(code: &'static str, message: &str) -> AppError {
    AppError::Unauthenticated {
        code,
        message: message.to_owned(),
    }
}

impl FromRequestParts<AppState> for Principal {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        let header = parts.headers.get(AUTHORIZATION).ok_or_else(|| {
            unauthenticated(
                "missing_token",
                "send `Authorization: Bearer <token>`: an API token from `widgetd token create`, \
                 or the session's agent token",
            )
        })?;
        let token = header
            .to_str()
            .ok()
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::trim)
            .ok_or_else(|| {
                unauthenticated(
                    "malformed_token",
                    "the Authorization header must be `Bearer <token>`",
                )
            })?;
        Self::resolve(state, token).await
    }
}

impl Principal {
    /// The principal of a bearer token, checked now: unknown, revoked, or
    /// belonging to a disabled user or an archived session is `401`. A
    /// known token is answered from the auth cache while the auth epoch
    /// has not moved (see `cache.rs`).
    pub async fn resolve(state: &AppState, token: &str) -> Result<Self, AppError> {
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

impl OptionalFromRequestParts<AppState> for Principal {
    type Rejection = AppError;

    /// No `Authorization` header is `None`; a bad one is still an error.
    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Option<Self>, AppError> {
        if parts.headers.get(AUTHORIZATION).is_none() {
            return Ok(None);
        }
        <Self as FromRequestParts<AppState>>::from_request_parts(parts, state)
            .await
            .map(Some)
    }
}

impl Principal {
    /// The user behind an API token that carries `scope`; 403 otherwise.
    pub fn user_with_scope(&self, scope: TokenScope) -> AppResult<&UserId> {
        match self {
            Self::User {
                user_id, scopes, ..
            } if scopes.contains(scope) => Ok(user_id),
            Self::User { .. } => Err(AppError::Forbidden(format!(
                "this needs an API token with the `{scope}` scope; mint one with \
                 `widgetd token create --user NAME --scope {scope}`"
            ))),
            Self::Agent { .. } => Err(AppError::Forbidden(format!(
                "agent tokens cannot do this; it needs a user's API token with the `{scope}` scope"
            ))),
        }
    }
}
