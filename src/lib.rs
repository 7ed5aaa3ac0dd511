//! widgetd: lets AI agents ask people for input through inline widgets, and
//! keeps the secrets people type out of the model.
//!
//! `main.rs` is a thin CLI over this library; tests use the same [`app`] and
//! [`serve`] on their own listener.

pub mod access;
pub mod api;
pub mod audit;
pub mod auth;
pub mod check;
pub mod cli;
pub mod clock;
pub mod connect;
pub mod crypto;
pub mod db;
pub mod demo;
pub mod error;
pub mod events;
pub mod exec;
pub mod hooks;
pub mod host;
pub mod icons;
pub mod ids;
pub mod limits;
pub mod mcp;
pub mod ops;
pub mod progress;
pub mod prompts;
pub mod restore;
pub mod secrets;
pub mod sessions;
pub mod startup;
pub mod stream_limits;
pub mod transcript;
pub mod web;
pub mod webhooks;
pub mod widgets;

use std::future::Future;
use std::net::SocketAddr;
use std::ops::Deref;
use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use tokio::net::TcpListener;

use crate::crypto::Keyring;
use crate::db::Db;
use crate::events::Hub;

/// Settings the HTTP surface needs. Holds no secret.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The URL people and agents reach this daemon at, without trailing `/`.
    pub public_url: String,
    /// The tag that opens every resume prompt.
    pub prompt_tag: String,
    /// How long a widget stays pending before it expires.
    pub widget_ttl_ms: i64,
    /// Host names (optionally `host:port`) the MCP endpoint answers to.
    pub mcp_allowed_hosts: Vec<String>,
    /// The first webhook retry waits this long; later ones longer.
    pub webhook_retry_base_ms: i64,
    /// The MCP elicitation modes `/mcp` may use (`serve --elicitation`).
    pub elicitation: mcp::Elicitation,
}

impl Settings {
    /// Defaults for a daemon reached at `public_url`.
    pub fn new(public_url: impl Into<String>) -> Self {
        let public_url = public_url.into().trim_end_matches('/').to_owned();
        let mut hosts = vec![
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
        ];
        if let Some(host) = public_url
            .split("://")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
        {
            hosts.push(host.to_owned());
        }
        Self {
            public_url,
            prompt_tag: prompts::DEFAULT_TAG.to_owned(),
            widget_ttl_ms: 7 * 24 * 3600 * 1000,
            mcp_allowed_hosts: hosts,
            webhook_retry_base_ms: 5000,
            elicitation: mcp::Elicitation::Url,
        }
    }

    /// `scheme://host[:port]` of the public URL, as browsers send in `Origin`.
    pub fn public_origin(&self) -> &str {
        let after_scheme = self.public_url.find("://").map_or(0, |i| i + 3);
        let end = self.public_url[after_scheme..]
            .find('/')
            .map_or(self.public_url.len(), |i| after_scheme + i);
        &self.public_url[..end]
    }
}

/// Everything a request handler may use.
pub struct Inner {
    pub db: Db,
    pub keyring: Keyring,
    pub settings: Settings,
    pub hub: Hub,
    pub metrics: ops::Metrics,
    /// Agent tokens waiting to be shown once after a redirect.
    pub shown_once: web::ShownOnce,
    /// Open event streams and long-polls, capped per caller and address.
    pub open_streams: stream_limits::OpenStreams,
    /// Who tokens, users and sessions are, checked against the auth epoch.
    pub auth_cache: auth::AuthCache,
}

/// Shared, cheaply cloned application state.
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

impl AppState {
    pub fn new(db: Db, keyring: Keyring, settings: Settings) -> Self {
        Self(Arc::new(Inner {
            db,
            keyring,
            settings,
            hub: Hub::default(),
            metrics: ops::Metrics::default(),
            shown_once: web::ShownOnce::default(),
            open_streams: stream_limits::OpenStreams::default(),
            auth_cache: auth::AuthCache::default(),
        }))
    }
}

impl Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

/// The whole HTTP application.
pub fn app(state: AppState) -> Router {
    Router::new()
        .merge(ops::router())
        .merge(sessions::api::router())
        .merge(secrets::api::router())
        .merge(widgets::api::router())
        .merge(prompts::api::router())
        .merge(events::api::router())
        .merge(transcript::router())
        .merge(transcript::reply::router())
        .merge(hooks::router())
        .merge(web::router())
        .merge(webhooks::api::router())
        .merge(webhooks::page::router())
        .layer(web::session_layer(&state))
        .merge(mcp::router(&state))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            check_host,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            ops::measure,
        ))
        .layer(axum::middleware::map_response(security_headers))
        .with_state(state)
}

/// Answers only to the host names it serves (the public URL's, loopback,
/// `--mcp-allowed-hosts`): a page of another site whose name an attacker
/// points at this daemon's address (DNS rebinding) gets `421` instead of
/// the login page or the API. A request without `Host` (HTTP/1.0) passes.
async fn check_host(
    axum::extract::State(state): axum::extract::State<AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .map(|h| h.to_str().unwrap_or("\u{0}"));
    match host {
        Some(host) if !host_allowed(&state.settings.mcp_allowed_hosts, host) => {
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
/// entries: an entry with a port must match exactly, one without matches
/// any port.
fn host_allowed(allowed: &[String], host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    allowed.iter().any(|entry| {
        let entry = entry.trim().trim_start_matches('[').replace(']', "");
        entry.eq_ignore_ascii_case(host) || entry.eq_ignore_ascii_case(name)
    })
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
    let app = app(state).into_make_service_with_connect_info::<SocketAddr>();
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await;
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
        /// allowed name, whatever the case, and its port fits the entry.
        #[test]
        fn only_allowed_host_names_pass(host in prop_oneof![near("example.com"), near("localhost"), near("[::1]")]) {
            let allowed = ["localhost".to_owned(), "::1".to_owned(), "example.com:8443".to_owned()];
            let (name, port) = match host.strip_prefix('[') {
                Some(rest) => {
                    let (name, after) = rest.split_once(']').unwrap_or((rest, ""));
                    (name.to_owned(), after.strip_prefix(':').map(str::to_owned))
                }
                None => match host.rsplit_once(':') {
                    Some((n, p)) => (n.to_owned(), Some(p.to_owned())),
                    None => (host.clone(), None),
                },
            };
            let name = name.to_ascii_lowercase();
            let expected = name == "localhost"
                || name == "::1"
                || (name == "example.com" && port.as_deref() == Some("8443"));
            prop_assert_eq!(host_allowed(&allowed, &host), expected, "{:?}", host);
        }
    }
}
