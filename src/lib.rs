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
pub mod forwarded;
pub mod hooks;
pub mod host;
pub mod icons;
pub mod ids;
pub mod limits;
mod listen;
pub mod logging;
pub mod mcp;
pub mod metrics;
pub mod ops;
pub mod progress;
pub mod prompts;
pub mod restore;
pub mod secrets;
pub mod sessions;
pub mod slack;
pub mod startup;
pub mod stream_limits;
#[cfg(test)]
mod testing;
pub mod transcript;
pub mod web;
pub mod webhooks;
pub mod widgets;

use std::future::Future;
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
    /// Host names every route answers to (`--mcp-allowed-hosts`, with
    /// loopback and the public URL's name). Compared without the port: a
    /// proxy's `Host: $host` drops it, and DNS rebinding is about names.
    pub mcp_allowed_hosts: Vec<String>,
    /// The first webhook retry waits this long; later ones longer.
    pub webhook_retry_base_ms: i64,
    /// The MCP elicitation modes `/mcp` may use (`serve --elicitation`).
    pub elicitation: mcp::Elicitation,
    /// Whether webhooks may go to loopback, private and link-local
    /// addresses (`serve --webhooks-allow-private`).
    pub webhooks_allow_private: bool,
    /// Reverse proxies whose `Forwarded` / `X-Forwarded-For` is believed
    /// (`serve --trusted-proxies`); empty: the TCP peer is the client.
    pub trusted_proxies: Vec<forwarded::IpRange>,
    /// The Slack Web API, `https://slack.com/api`; another only in tests
    /// (`serve --slack-api-base`, hidden), which point it at a fake.
    pub slack_api_base: String,
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
            hosts.push(host_name(host).to_owned());
        }
        Self {
            public_url,
            prompt_tag: prompts::DEFAULT_TAG.to_owned(),
            widget_ttl_ms: 7 * 24 * 3600 * 1000,
            mcp_allowed_hosts: hosts,
            webhook_retry_base_ms: 5000,
            elicitation: mcp::Elicitation::Url,
            webhooks_allow_private: false,
            trusted_proxies: Vec::new(),
            slack_api_base: slack::API_BASE.to_owned(),
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
    pub fn new(db: Db, keyring: Keyring, mut settings: Settings) -> Self {
        // Names only, also for rmcp's own check of `/mcp` (an entry without
        // a port matches any port there too), so both checks agree.
        for entry in &mut settings.mcp_allowed_hosts {
            *entry = host_name(entry.trim()).to_ascii_lowercase();
        }
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
        .merge(slack::page::router())
        .merge(slack::interact::router())
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
/// entries, by name only: the port is ignored on both sides.
fn host_allowed(allowed: &[String], host: &str) -> bool {
    let name = host_name(host);
    allowed
        .iter()
        .any(|entry| host_name(entry.trim()).eq_ignore_ascii_case(name))
}

/// The name of `name`, `name:port`, `[v6]`, `[v6]:port` or a bare IPv6
/// address.
fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or_default();
    }
    match host.rsplit_once(':') {
        // More than one colon and no brackets: a bare IPv6 address.
        Some((name, _)) if !name.contains(':') => name,
        _ => host,
    }
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
