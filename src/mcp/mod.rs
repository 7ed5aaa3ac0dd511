//! MCP over Streamable HTTP at `/mcp`: the agent's way to ask for input.
//!
//! Every request carries the session's agent token. The middleware here
//! resolves it before rmcp sees the request; the tools then read the
//! resulting [`AgentSession`] from the HTTP parts rmcp hands them, so a
//! session id never comes from tool arguments. The service is stateless:
//! each POST is answered on its own, and nothing about the agent outlives
//! the request except what the tools write to the database.

mod tools;

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::http::header::{AUTHORIZATION, ORIGIN};
use axum::middleware::{self, Next};
use axum::response::Response;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use crate::AppState;
use crate::audit::ClientAddr;
use crate::auth::tokens::{self, AGENT_TOKEN_PREFIX};
use crate::error::{AppError, AppResult};
use crate::ids::SessionId;
use crate::sessions;

use tools::AgentTools;

/// The caller of an MCP request, as the middleware authenticated it.
#[derive(Debug, Clone)]
struct AgentSession {
    session_id: SessionId,
    client: ClientAddr,
}

/// The `/mcp` endpoint, authenticated by agent token.
pub fn router(state: &AppState) -> Router<AppState> {
    let server = AgentTools::new(state.clone());
    let config = StreamableHttpServerConfig::default()
        // Stateless: no `Mcp-Session-Id` to track, and every request is
        // authenticated on its own.
        .with_legacy_session_mode(false)
        .with_json_response(true)
        // rmcp checks `Host` against this list (DNS rebinding defence).
        .with_allowed_hosts(state.settings.mcp_allowed_hosts.clone());
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    Router::new()
        .route_service("/mcp", service)
        .route_layer(middleware::from_fn_with_state(state.clone(), authenticate))
}

/// Refuses foreign browser origins and anything but a live agent token, and
/// hands the tools who is calling.
async fn authenticate(
    State(state): State<AppState>,
    client: ClientAddr,
    mut request: Request,
    next: Next,
) -> AppResult<Response> {
    check_origin(&state, request.headers())?;
    let session_id = agent_session(&state, request.headers()).await?;
    request
        .extensions_mut()
        .insert(AgentSession { session_id, client });
    Ok(next.run(request).await)
}

/// A browser sends `Origin`; only pages of this daemon may reach `/mcp` from
/// one, so a site the user happens to visit cannot drive the agent's tools.
fn check_origin(state: &AppState, headers: &HeaderMap) -> AppResult<()> {
    match headers.get(ORIGIN) {
        Some(origin) if origin.as_bytes() != state.settings.public_origin().as_bytes() => Err(
            AppError::Forbidden("requests to /mcp from another origin are refused".into()),
        ),
        _ => Ok(()),
    }
}

fn unauthenticated(code: &'static str, message: &str) -> AppError {
    AppError::Unauthenticated {
        code,
        message: message.to_owned(),
    }
}

/// The session whose live agent token is in `Authorization: Bearer …`.
/// API tokens are refused: they act for a user, and an agent's tools must
/// stay inside one session.
async fn agent_session(state: &AppState, headers: &HeaderMap) -> AppResult<SessionId> {
    let header = headers.get(AUTHORIZATION).ok_or_else(|| {
        unauthenticated(
            "missing_token",
            "send `Authorization: Bearer <token>` with the session's agent token",
        )
    })?;
    let invalid = || {
        unauthenticated(
            "invalid_token",
            "/mcp takes the agent token of a live session (`wda_…`); API tokens, unknown \
             tokens and tokens of archived sessions are refused",
        )
    };
    let token = header
        .to_str()
        .ok()
        .and_then(|h| h.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| t.starts_with(AGENT_TOKEN_PREFIX))
        .ok_or_else(invalid)?;
    let mut conn = state.db.read.acquire().await?;
    sessions::find_live_agent_token(&mut conn, &tokens::hash(token))
        .await?
        .ok_or_else(invalid)
}
