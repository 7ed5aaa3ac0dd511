//! The layers `app()` puts around every route, from the outside in:
//! [`unbuffered`] and [`security_headers`] on every response,
//! [`resolve_client`] (the client's address behind a trusted proxy),
//! `ops::measure` (metrics and the refusal log), [`check_host`] (DNS
//! rebinding) and [`hold_waits`] (calls that wait count against the stream
//! caps and are re-authorized while they wait).

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::header::AUTHORIZATION;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use widgetd_domain::audit::ClientAddr;
use widgetd_domain::auth::Principal;

use crate::forwarded::client_ip;
use crate::settings::host_name;
use crate::state::AppState;
use crate::stream_limits::{Waited, caller_key};

/// Answers only to the host names it serves (the public URL's, loopback,
/// `--mcp-allowed-hosts`), whatever the port: a page of another site whose
/// name an attacker points at this daemon's address (DNS rebinding) gets
/// `421` instead of the login page or the API. A request without `Host`
/// (HTTP/1.0) passes, and so do `/healthz` and `/readyz`, which reveal
/// nothing and are probed by address (`Host: 10.0.0.5:7700`).
pub async fn check_host(State(state): State<AppState>, request: Request, next: Next) -> Response {
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
pub async fn unbuffered(request: Request, next: axum::middleware::Next) -> Response {
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
pub async fn security_headers(mut response: Response) -> Response {
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

/// Replaces the request's peer address with the client's when the peer is
/// a trusted proxy, for every extractor that reads it (`ClientAddr`).
pub async fn resolve_client(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    if !state.config.trusted_proxies.is_empty()
        && let Some(ConnectInfo(peer)) = request.extensions().get::<ConnectInfo<SocketAddr>>()
    {
        let client = client_ip(
            peer.ip(),
            request.headers(),
            state.config.forwarded_header,
            &state.config.trusted_proxies,
        );
        let rewritten = SocketAddr::new(client, peer.port());
        request.extensions_mut().insert(ConnectInfo(rewritten));
    }
    next.run(request).await
}

/// A bearer call still running after this long waits for something (a
/// person's answer, a prompt): it takes a place in the caps and is
/// re-authorized while it waits.
const WAITING_AFTER: Duration = Duration::from_secs(1);
/// How often a waiting call re-checks its token when nothing ended it.
pub const RECHECK: Duration = Duration::from_secs(10);
/// How long a long-poll whose token fails the first check may take to
/// answer it itself: each route refuses a bad token in its own words (a
/// Claude Code hook with a deny that says what to fix), at once.
const OWN_REFUSAL: Duration = Duration::from_secs(5);

/// Holds every bearer-token call that waits to what an event stream is
/// held to: it counts against the caps (from the start for a `?wait=N`
/// long-poll, after [`WAITING_AFTER`] for a `wait_seconds` call), and its
/// token is checked again every [`RECHECK`] and once more when the answer
/// is ready. A token revoked meanwhile (its user disabled, its session
/// archived) gets `401` instead of the answer; the answer's prompt then
/// stays queued, as for a caller that went away.
pub async fn hold_waits(
    State(state): State<AppState>,
    client: ClientAddr,
    request: Request,
    next: Next,
) -> Response {
    let Some(token) = bearer(&request) else {
        return next.run(request).await;
    };
    let long_poll = request.uri().query().is_some_and(|q| {
        q.split('&')
            .any(|pair| pair.strip_prefix("wait=").is_some_and(|w| w != "0"))
    });
    let call = next.run(request);
    tokio::pin!(call);
    if !long_poll {
        tokio::select! {
            response = &mut call => return response,
            () = tokio::time::sleep(WAITING_AFTER) => {}
        }
    }
    // Every check runs while the call goes on: a call may hold a database
    // connection or the write lock that the check itself waits for.
    let principal = match alongside(call.as_mut(), recheck(&state, &token)).await {
        // A long-poll answered before its first check: the call authorized
        // the token itself a moment ago, and answered in its own words.
        Either::Done(mut response) if long_poll => {
            response.extensions_mut().insert(Waited);
            return response;
        }
        Either::Done(response) => return finish(&state, &token, response).await,
        Either::Checked(Ok(principal)) => principal,
        Either::Checked(Err(refused)) if long_poll => {
            return tokio::time::timeout(OWN_REFUSAL, call)
                .await
                .unwrap_or(refused);
        }
        Either::Checked(Err(refused)) => return refused,
    };
    let slot = state
        .open_streams
        .open(caller_key(Some(&principal), None), client.0.as_deref());
    let _slot = match slot {
        Ok(slot) => slot,
        Err(err) => return err.into_response(),
    };
    loop {
        let tick = async {
            tokio::time::sleep(RECHECK).await;
            recheck(&state, &token).await
        };
        match alongside(call.as_mut(), tick).await {
            Either::Done(response) => return finish(&state, &token, response).await,
            Either::Checked(Ok(_)) => {}
            Either::Checked(Err(refused)) => return refused,
        }
    }
}

/// What ended first: the call, or the check run beside it.
enum Either<T> {
    Done(Response),
    Checked(T),
}

/// Drives `call` and `check` together until one of them ends.
async fn alongside<F, C>(call: std::pin::Pin<&mut F>, check: C) -> Either<C::Output>
where
    F: Future<Output = Response>,
    C: Future,
{
    tokio::select! {
        response = call => Either::Done(response),
        checked = check => Either::Checked(checked),
    }
}

/// The answer of a call that waited, if its token still holds.
async fn finish(
    state: &AppState,
    token: &secrecy::SecretString,
    mut response: Response,
) -> Response {
    response.extensions_mut().insert(Waited);
    match recheck(state, token).await {
        Ok(_) => response,
        Err(refused) => refused,
    }
}

fn bearer(request: &Request) -> Option<secrecy::SecretString> {
    let value = request.headers().get(AUTHORIZATION)?.to_str().ok()?;
    let token = value.strip_prefix("Bearer ")?.trim();
    Some(token.to_owned().into())
}

/// The token's principal now (an auth epoch read fresh for a request
/// arriving now, not what the call saw when it arrived), or the `401` to answer with.
async fn recheck(state: &AppState, token: &secrecy::SecretString) -> Result<Principal, Response> {
    use secrecy::ExposeSecret;
    state
        .auth_cache
        .arrival(Principal::resolve(state, token.expose_secret()))
        .await
        .map_err(|err| crate::error::WebError::from(err).into_response())
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
