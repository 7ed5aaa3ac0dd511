//! The HTTP side of [`Principal`]: read from `Authorization: Bearer …` once
//! per request, before any handler logic runs.

use axum::extract::{FromRequestParts, OptionalFromRequestParts};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

use super::Principal;
use super::principal::unauthenticated;
use crate::AppState;
use crate::error::AppError;

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
