//! The domain's types that handlers take straight from a request: the
//! [`Principal`] of `Authorization: Bearer …`, read once per request before
//! any handler logic runs, and the [`ClientAddr`] the request came from.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, FromRequestParts, OptionalFromRequestParts};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use widgetd_domain::audit::ClientAddr;
use widgetd_domain::auth::Principal;
use widgetd_domain::auth::principal::unauthenticated;

use crate::error::WebError;
use crate::state::AppState;

impl FromRequestParts<AppState> for ClientAddr {
    type Rejection = std::convert::Infallible;

    /// The TCP peer's address, or behind a trusted proxy the client's it
    /// named (`middleware::resolve_client` puts it in place first).
    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, Self::Rejection> {
        Ok(client_of(&parts.extensions))
    }
}

/// The address a request came from, as [`ClientAddr`]'s extractor reads it,
/// for a router whose state is not [`AppState`] (`/mcp`).
pub fn client_of(extensions: &axum::http::Extensions) -> ClientAddr {
    let addr = extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip().to_string());
    ClientAddr(addr)
}

impl FromRequestParts<AppState> for Principal {
    type Rejection = WebError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, WebError> {
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
        Ok(Self::resolve(state, token).await?)
    }
}

impl OptionalFromRequestParts<AppState> for Principal {
    type Rejection = WebError;

    /// No `Authorization` header is `None`; a bad one is still an error.
    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Option<Self>, WebError> {
        if parts.headers.get(AUTHORIZATION).is_none() {
            return Ok(None);
        }
        <Self as FromRequestParts<AppState>>::from_request_parts(parts, state)
            .await
            .map(Some)
    }
}
