//! MCP over Streamable HTTP at `/mcp`: the agent's way to ask for input.
//!
//! Every request carries the session's agent token. The handler here
//! resolves it before rmcp sees the request; the tools then read the
//! resulting [`AgentSession`] from the HTTP parts rmcp hands them, so a
//! session id never comes from tool arguments. The service is stateless
//! (each POST is answered on its own), except for the one kind of client
//! that needs an MCP session: one whose `initialize` (protocols before
//! 2026-07-28) declares elicitation or MCP Apps (see [`sessions`] and
//! [`apps`]).

mod agent;
mod answers;
mod app_document;
mod apps;
mod create;
mod elicit;
mod fields_form;
mod inflight;
mod life;
mod offers;
mod questions;
mod requests;
mod schema;
mod scrub;
mod sessions;
mod shown;
mod tools;

pub use widgetd_domain::sessions::Elicitation;

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, ORIGIN};
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use crate::api::widgets::respond;
use crate::error::WebResult;
use crate::state::AppState;
use widgetd_domain::Error;
use widgetd_domain::audit::ClientAddr;
use widgetd_domain::auth::tokens::AGENT_TOKEN_PREFIX;
use widgetd_domain::ids::SessionId;
use widgetd_domain::widgets::engine::delivery;

use agent::AgentTools;
use inflight::{CallKey, InFlight, Message, Peek};
use sessions::Sessions;

/// What `initialize` tells the agent.
pub(super) const INSTRUCTIONS: &str = "widgetd lets you ask the user for input through forms shown inline in \
    the conversation transcript. When you need an environment variable such as an API key, call \
    request_env_vars and end your turn: the user types the values into a secure form, and they \
    are injected into your environment on your next turn without ever passing through the \
    conversation. Never ask for secret values in chat.";

/// Largest `/mcp` request body read.
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// The caller of an MCP request, as the handler authenticated it.
#[derive(Clone)]
struct AgentSession {
    session_id: SessionId,
    client: ClientAddr,
    inflight: InFlight,
    /// The request came over an MCP session, so the tools may send the
    /// client requests of their own (`elicitation/create`).
    in_session: bool,
    /// When the request arrived: rmcp runs a tool in a task of its own,
    /// and the tool's auth checks count from here (`auth::cache`).
    arrival: widgetd_domain::auth::cache::Arrival,
}

/// What `/mcp` is made of: rmcp's service twice (stateless, and with MCP
/// sessions) and the bookkeeping around them. Shared behind an `Arc`:
/// axum clones a route's state for every request, and each service holds
/// its configuration by value.
struct Mcp {
    state: AppState,
    inflight: InFlight,
    stateless: StreamableHttpService<AgentTools, NeverSessionManager>,
    with_sessions: StreamableHttpService<AgentTools, LocalSessionManager>,
    sessions: Sessions,
}

/// The `/mcp` endpoint, authenticated by agent token.
pub fn router(state: &AppState) -> Router<AppState> {
    let server = AgentTools::new(state.clone());
    let config = StreamableHttpServerConfig::default()
        .with_json_response(true)
        // rmcp checks `Host` against this list (DNS rebinding defence).
        .with_allowed_hosts(state.config.mcp_allowed_hosts.clone());
    let stateless = {
        let server = server.clone();
        StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(NeverSessionManager::default()),
            config.clone().with_legacy_session_mode(false),
        )
    };
    let sessions = Sessions::default();
    let with_sessions = StreamableHttpService::new(
        move || Ok(server.clone()),
        sessions.manager.clone(),
        config.with_legacy_session_mode(true),
    );
    let mcp = Mcp {
        state: state.clone(),
        inflight: InFlight::default(),
        stateless,
        with_sessions,
        sessions,
    };
    Router::new().route("/mcp", axum::routing::any(serve).with_state(Arc::new(mcp)))
}

/// Refuses foreign browser origins and anything but a live agent token,
/// hands the tools who is calling, keeps track of tool calls under way so
/// that a cancellation reaches them (see [`inflight`]), and sends the
/// request to the stateless service or, for a client that needs one, to
/// its MCP session.
async fn serve(State(mcp): State<Arc<Mcp>>, request: Request) -> WebResult<Response> {
    let state = &mcp.state;
    let client = crate::api::client_of(request.extensions());
    check_origin(state, request.headers())?;
    let session_id = agent_session(state, request.headers()).await?;
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|_| Error::BadRequest {
            code: "body_unreadable",
            message: "the request body could not be read (is it over 4 MiB?)".into(),
        })?;
    let message = match parts.method {
        Method::POST => {
            serde_json::from_slice::<Peek>(&bytes).map_or(Message::Other, Peek::classify)
        }
        _ => Message::Other,
    };
    let mcp_session = parts
        .headers
        .get(sessions::HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Some(id) = &mcp_session
        && !mcp.sessions.belongs_to(id, &session_id)
    {
        // As rmcp answers an unknown or ended session: the client starts
        // a new one.
        return Ok((
            axum::http::StatusCode::NOT_FOUND,
            "Not Found: Session not found; send `initialize` to start a new MCP session",
        )
            .into_response());
    }
    let opens_session = match message {
        Message::Initialize { elicitation, apps } => {
            apps || (elicitation && state.settings.elicitation != Elicitation::Off)
        }
        _ => false,
    };
    let in_session = mcp_session.is_some() || opens_session;
    let mut request = Request::from_parts(parts, Body::from(bytes));
    request.extensions_mut().insert(AgentSession {
        session_id: session_id.clone(),
        client,
        inflight: mcp.inflight.clone(),
        in_session,
        arrival: state.auth_cache.arrived(),
    });
    let route = Route {
        in_session,
        opens_session,
        mcp_session,
    };
    match message {
        Message::Cancelled(id) => {
            mcp.inflight.cancel(&CallKey::new(&session_id, &id));
            Ok(dispatch(&mcp, request, route, &session_id).await)
        }
        Message::ToolCall(id) => {
            let key = CallKey::new(&session_id, &id);
            mcp.inflight.start(&key);
            let response = dispatch(&mcp, request, route, &session_id).await;
            Ok(finish_when_sent(
                mcp.state.clone(),
                mcp.inflight.clone(),
                key,
                response,
            ))
        }
        Message::Initialize { .. } | Message::Other => {
            Ok(dispatch(&mcp, request, route, &session_id).await)
        }
    }
}

/// Where a request goes.
struct Route {
    /// To the service with MCP sessions.
    in_session: bool,
    /// It is an `initialize` that opens one.
    opens_session: bool,
    /// The `Mcp-Session-Id` it names.
    mcp_session: Option<String>,
}

/// Runs the request on its service, binds a session it opened to `agent`,
/// and takes the client's words out of any error in the response.
async fn dispatch(mcp: &Mcp, request: Request, route: Route, agent: &SessionId) -> Response {
    let ends_session = request.method() == Method::DELETE;
    let response = match route.in_session {
        true => mcp.with_sessions.handle(request).await.map(Body::new),
        false => mcp.stateless.handle(request).await.map(Body::new),
    };
    if route.opens_session
        && let Some(id) = response
            .headers()
            .get(sessions::HEADER)
            .and_then(|v| v.to_str().ok())
    {
        mcp.sessions.bind(id.to_owned(), agent).await;
    }
    if ends_session && let Some(id) = &route.mcp_session {
        mcp.sessions.forget(id);
    }
    scrub::without_echo(response).await
}

/// Ends the call's registration once its response body is gone, and
/// acknowledges the answer it carried only if the body went out whole.
fn finish_when_sent(
    state: AppState,
    inflight: InFlight,
    key: CallKey,
    response: Response,
) -> Response {
    respond::on_body_end(response, move |sent| {
        if let (true, Some(answered)) = (sent, inflight.finish(&key)) {
            tokio::spawn(async move { delivery::acknowledge(&state, &answered).await });
        }
    })
}

/// A browser sends `Origin`; only pages of this daemon may reach `/mcp` from
/// one, so a site the user happens to visit cannot drive the agent's tools.
fn check_origin(state: &AppState, headers: &HeaderMap) -> WebResult<()> {
    match headers.get(ORIGIN) {
        Some(origin) if !same_daemon(origin.as_bytes(), state.settings.public_origin()) => {
            Err(Error::Forbidden("requests to /mcp from another origin are refused".into()).into())
        }
        _ => Ok(()),
    }
}

/// Whether `origin` is this daemon's public origin. A daemon reached at a
/// loopback address is the same whichever loopback name the page used
/// (`localhost`, `127.0.0.1`, `[::1]`), as rmcp's `Host` check treats
/// them, provided the scheme and port are its own.
fn same_daemon(origin: &[u8], public: &str) -> bool {
    if origin == public.as_bytes() {
        return true;
    }
    let loopback = |url: &url::Url| match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    let parse = |text: &str| url::Url::parse(text).ok();
    match (
        std::str::from_utf8(origin).ok().and_then(parse),
        parse(public),
    ) {
        (Some(origin), Some(public)) => {
            loopback(&origin)
                && loopback(&public)
                && origin.scheme() == public.scheme()
                && origin.port_or_known_default() == public.port_or_known_default()
                && origin.path() == "/"
                && origin.query().is_none()
                && origin.username().is_empty()
        }
        _ => false,
    }
}

fn unauthenticated(code: &'static str, message: &str) -> Error {
    Error::Unauthenticated {
        code,
        message: message.to_owned(),
    }
}

/// The session whose live agent token is in `Authorization: Bearer …`.
/// API tokens are refused: they act for a user, and an agent's tools must
/// stay inside one session.
async fn agent_session(state: &AppState, headers: &HeaderMap) -> WebResult<SessionId> {
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
    match widgetd_domain::auth::Principal::resolve(state, token).await {
        Ok(widgetd_domain::auth::Principal::Agent { session_id }) => Ok(session_id),
        Ok(widgetd_domain::auth::Principal::User { .. }) | Err(Error::Unauthenticated { .. }) => {
            Err(invalid().into())
        }
        Err(other) => Err(other.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::same_daemon;

    #[test]
    fn every_loopback_name_of_a_loopback_daemon_is_its_origin() {
        let public = "http://127.0.0.1:7700";
        for origin in [
            "http://127.0.0.1:7700",
            "http://localhost:7700",
            "http://LOCALHOST:7700",
            "http://[::1]:7700",
        ] {
            assert!(same_daemon(origin.as_bytes(), public), "{origin}");
        }
        for origin in [
            "http://localhost:7701",
            "https://localhost:7700",
            "http://localhost.evil.example:7700",
            "http://evil.example:7700",
            "http://user@localhost:7700",
            "null",
        ] {
            assert!(!same_daemon(origin.as_bytes(), public), "{origin}");
        }
        let public = "https://widgetd.example";
        assert!(same_daemon(b"https://widgetd.example", public));
        assert!(!same_daemon(b"https://localhost", public));
    }
}
