//! widgetd's server: the HTTP API, the pages, MCP, the Slack and hook
//! endpoints and the command line, over the domain crate
//! (`widgetd_domain`) and the notifiers (`widgetd_notify`).
//!
//! `main.rs` is a thin CLI over this library; tests use the same [`app`] and
//! [`serve`] on their own listener.

pub mod api;
pub mod cards;
pub mod check;
pub mod cli;
pub mod connect;
pub mod demo;
pub mod error;
pub mod exec;
pub mod forwarded;
pub mod hooks;
pub mod host;
pub mod icons;
mod listen;
pub mod logging;
pub mod mcp;
pub mod metrics;
pub mod ops;
pub mod restore;
pub mod settings;
pub mod state;
pub mod stream_limits;
pub mod web;

use std::future::Future;

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use tokio::net::TcpListener;
use widgetd_domain::ids;

pub use crate::settings::Settings;
use crate::settings::host_name;
pub use crate::state::AppState;

/// The whole HTTP application.
pub fn app(state: AppState) -> Router {
    Router::new()
        .merge(ops::router())
        .merge(api::router())
        .merge(hooks::router())
        .merge(web::router())
        .layer(web::session_layer(&state))
        .merge(mcp::router(&state))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            stream_limits::hold_waits,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            check_host,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            ops::measure,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            forwarded::resolve_client,
        ))
        .layer(axum::middleware::map_response(security_headers))
        .layer(axum::middleware::from_fn(unbuffered))
        .with_state(state)
}

/// Answers only to the host names it serves (the public URL's, loopback,
/// `--mcp-allowed-hosts`), whatever the port: a page of another site whose
/// name an attacker points at this daemon's address (DNS rebinding) gets
/// `421` instead of the login page or the API. A request without `Host`
/// (HTTP/1.0) passes, and so do `/healthz` and `/readyz`, which reveal
/// nothing and are probed by address (`Host: 10.0.0.5:7700`).
async fn check_host(
    axum::extract::State(state): axum::extract::State<AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .map(|h| h.to_str().unwrap_or("\u{0}"));
    let probe = matches!(request.uri().path(), "/healthz" | "/readyz");
    match host {
        _ if probe => next.run(request).await,
        Some(host) if !host_allowed(&state.config.mcp_allowed_hosts, host) => {
            let body = serde_json::json!({ "error": { "code": "unknown_host",
                "message": "this daemon does not answer to that host name; use its public URL (or add the name with --mcp-allowed-hosts)" } });
            (
                axum::http::StatusCode::MISDIRECTED_REQUEST,
                axum::Json(body),
            )
                .into_response()
        }
        _ => next.run(request).await,
    }
}

/// `host` (`name` or `name:port`, IPv6 in brackets) against the allowed
/// entries, by name only: the port is ignored on both sides.
fn host_allowed(allowed: &[String], host: &str) -> bool {
    let name = host_name(host);
    allowed
        .iter()
        .any(|entry| host_name(entry.trim()).eq_ignore_ascii_case(name))
}

/// `X-Accel-Buffering: no` on every response that streams or waits: event
/// streams (`text/event-stream`, the browser's, the API's and MCP's),
/// everything `/mcp` answers, and long-polls (`?wait=`). nginx buffers a
/// proxied response by default, so without it a new event would sit in the
/// proxy's buffer instead of reaching the page or the agent.
async fn unbuffered(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let waits = request.uri().path() == "/mcp"
        || request
            .uri()
            .query()
            .is_some_and(|q| q.split('&').any(|pair| pair.starts_with("wait=")));
    let mut response = next.run(request).await;
    let streams = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if waits || streams {
        response
            .headers_mut()
            .insert("x-accel-buffering", HeaderValue::from_static("no"));
    }
    response
}

/// Headers on every response, errors included: nothing here may be cached,
/// sniffed, framed or leak a referrer.
async fn security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    let fixed = [
        (header::CACHE_CONTROL, "no-store"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
             connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
        ),
    ];
    for (name, value) in fixed {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// Serves `state` on `listener` until `shutdown` completes, then lets
/// in-flight requests finish.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let hub = state.hub.clone();
    let woken = hub.clone();
    let follower = state.db.follow_changes(move |session| match session {
        Some(session) => {
            if let Some(session) = ids::SessionId::parse(session) {
                woken.publish(&session);
            }
        }
        None => woken.wake_all(),
    });
    let shutdown = async move {
        shutdown.await;
        // Open event streams and long-polls end, so the graceful shutdown
        // does not wait on them.
        hub.close();
    };
    let served = listen::serve(listener, app(state), shutdown).await;
    if let Some(follower) = follower {
        follower.abort();
    }
    served
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::host_allowed;

    /// A host name an attacker would try: an allowed one changed a little,
    /// or anything at all.
    fn near(name: &'static str) -> BoxedStrategy<String> {
        prop_oneof![
            Just(name.to_owned()),
            Just(name.to_uppercase()),
            (1u16..).prop_map(move |p| format!("{name}:{p}")),
            "[a-z0-9.-]{1,12}".prop_map(move |s| format!("{s}.{name}")),
            "[a-z0-9.-]{1,12}".prop_map(move |s| format!("{name}.{s}")),
            "[a-z0-9.-]{1,12}".prop_map(move |s| format!("{name}{s}")),
            any::<String>(),
        ]
        .boxed()
    }

    proptest! {
        /// A `Host` passes exactly when its name (port stripped) is an
        /// allowed name, whatever the case and whatever the port (on
        /// either side).
        #[test]
        fn only_allowed_host_names_pass(host in prop_oneof![near("example.com"), near("localhost"), near("[::1]")]) {
            let allowed = ["localhost".to_owned(), "::1".to_owned(), "example.com:8443".to_owned()];
            let name = match host.strip_prefix('[') {
                Some(rest) => rest.split_once(']').map_or(rest, |(name, _)| name).to_owned(),
                None => match host.rsplit_once(':') {
                    Some((n, _)) if !n.contains(':') => n.to_owned(),
                    _ => host.clone(),
                },
            };
            let name = name.to_ascii_lowercase();
            let expected = name == "localhost" || name == "::1" || name == "example.com";
            prop_assert_eq!(host_allowed(&allowed, &host), expected, "{:?}", host);
        }
    }
}
