//! MCP over Streamable HTTP at `/mcp`: the agent's way to ask for input.
//!
//! Every request carries the session's agent token. The middleware here
//! resolves it before rmcp sees the request; the tools then read the
//! resulting [`AgentSession`] from the HTTP parts rmcp hands them, so a
//! session id never comes from tool arguments. The service is stateless:
//! each POST is answered on its own, and nothing about the agent outlives
//! the request except what the tools write to the database.

mod elicit;
mod inflight;
mod modes;
mod tools;

pub use modes::Elicitation;

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::http::header::{AUTHORIZATION, ORIGIN};
use axum::middleware::{self, Next};
use axum::response::Response;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use crate::AppState;
use crate::audit::ClientAddr;
use crate::auth::tokens::AGENT_TOKEN_PREFIX;
use crate::error::{AppError, AppResult};
use crate::ids::SessionId;
use crate::widgets::delivery;

use inflight::{CallKey, InFlight, Message, Peek};
use tools::AgentTools;

/// Largest `/mcp` request body read.
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// The caller of an MCP request, as the middleware authenticated it.
#[derive(Clone)]
struct AgentSession {
    session_id: SessionId,
    client: ClientAddr,
    inflight: InFlight,
}

/// The `/mcp` endpoint, authenticated by agent token.
pub fn router(state: &AppState) -> Router<AppState> {
    let server = AgentTools::new(state.clone());
    let inflight = InFlight::default();
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
        .route_layer(middleware::from_fn_with_state(
            (state.clone(), inflight),
            authenticate,
        ))
}

/// Refuses foreign browser origins and anything but a live agent token,
/// hands the tools who is calling, and keeps track of tool calls under way
/// so that a cancellation reaches them (see [`inflight`]).
async fn authenticate(
    State((state, inflight)): State<(AppState, InFlight)>,
    client: ClientAddr,
    request: Request,
    next: Next,
) -> AppResult<Response> {
    check_origin(&state, request.headers())?;
    let session_id = agent_session(&state, request.headers()).await?;
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|_| AppError::BadRequest {
            code: "body_unreadable",
            message: "the request body could not be read (is it over 4 MiB?)".into(),
        })?;
    let message = serde_json::from_slice::<Peek>(&bytes).map_or(Message::Other, Peek::classify);
    let mut request = Request::from_parts(parts, Body::from(bytes));
    request.extensions_mut().insert(AgentSession {
        session_id: session_id.clone(),
        client,
        inflight: inflight.clone(),
    });
    match message {
        Message::Cancelled(id) => {
            inflight.cancel(&CallKey::new(&session_id, &id));
            Ok(next.run(request).await)
        }
        Message::ToolCall(id) => {
            let key = CallKey::new(&session_id, &id);
            inflight.start(&key);
            let response = without_echo(next.run(request).await).await;
            Ok(finish_when_sent(state, inflight, key, response))
        }
        Message::Other => Ok(without_echo(next.run(request).await).await),
    }
}

/// rmcp's JSON-RPC errors repeat what the client sent (an unknown method's
/// name, serde's "invalid type: string \"…\"" for malformed params). An
/// error response here gets a fixed message for its code instead.
async fn without_echo(response: Response) -> Response {
    #[derive(serde::Deserialize)]
    struct Reply {
        #[serde(default)]
        id: serde_json::Value,
        error: Option<ErrorCode>,
    }
    #[derive(serde::Deserialize)]
    struct ErrorCode {
        code: i64,
    }
    let is_json = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
        return Response::from_parts(parts, Body::empty());
    };
    let Ok(Reply {
        id,
        error: Some(ErrorCode { code }),
    }) = serde_json::from_slice(&bytes)
    else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    let message = match code {
        -32700 => "parse error: the body is not valid JSON",
        -32600 => "invalid request: not a JSON-RPC 2.0 request this server accepts",
        -32601 => "method not found",
        -32602 => "invalid params: check them against the method's schema",
        _ => "the request was refused",
    };
    let body = serde_json::json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } });
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(body.to_string()))
}

/// Ends the call's registration once its response body is gone, and
/// acknowledges the answer it carried only if the body went out whole.
fn finish_when_sent(
    state: AppState,
    inflight: InFlight,
    key: CallKey,
    response: Response,
) -> Response {
    delivery::on_body_end(response, move |sent| {
        if let (true, Some(answered)) = (sent, inflight.finish(&key)) {
            tokio::spawn(async move { delivery::acknowledge(&state, &answered).await });
        }
    })
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
    match crate::auth::Principal::resolve(state, token).await {
        Ok(crate::auth::Principal::Agent { session_id }) => Ok(session_id),
        Ok(crate::auth::Principal::User { .. }) | Err(AppError::Unauthenticated { .. }) => {
            Err(invalid())
        }
        Err(other) => Err(other),
    }
}
