//! Caps on connections that stay open: event streams, long-polls and
//! calls that wait for a person (`wait_seconds`, the hooks' `?wait=`).
//!
//! Each open one holds a [`StreamSlot`] for its caller (a user, whatever
//! token or browser session they use, or an agent's session) and for the
//! client address; the slot is given back when the stream or long-poll
//! ends. Past a cap the request is refused with `429 too_many_streams`
//! before anything is opened. The counts live in this process: several
//! daemons on one PostgreSQL database each allow as many.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::WebResult;
use crate::state::AppState;
use widgetd_domain::Error;
use widgetd_domain::audit::ClientAddr;
use widgetd_domain::auth::Principal;
use widgetd_domain::ids::UserId;

/// Open event streams and long-polls per caller. A page opens one stream
/// per tab; a host one long-poll per session it hosts, and one person may
/// host dozens of agents under one token.
pub const PER_CALLER: usize = 64;
/// Per client address: a team behind one NAT shares it; several callers.
pub const PER_ADDRESS: usize = 256;

/// The counts of open streams, by key.
#[derive(Debug, Default)]
pub struct OpenStreams {
    counts: Arc<Mutex<HashMap<String, usize>>>,
}

/// One open stream or long-poll; dropping it gives its place back.
#[derive(Debug)]
pub struct StreamSlot {
    keys: [String; 2],
    counts: Arc<Mutex<HashMap<String, usize>>>,
}

impl OpenStreams {
    /// Takes a place for `caller` (e.g. `user:ID`, `agent:SESSION`) from
    /// `address`; `429 too_many_streams` if either is at its cap.
    pub fn open(&self, caller: String, address: Option<&str>) -> WebResult<StreamSlot> {
        let address = format!("addr:{}", address.unwrap_or("unknown"));
        let mut counts = self.counts.lock().expect("stream counts lock");
        let caller_open = counts.get(&caller).copied().unwrap_or(0);
        let address_open = counts.get(&address).copied().unwrap_or(0);
        if caller_open >= PER_CALLER || address_open >= PER_ADDRESS {
            return Err(Error::TooMany {
                code: "too_many_streams",
                message: format!(
                    "too many event streams and long-polls are open (at most {PER_CALLER} per \
                     caller and {PER_ADDRESS} per address); close one, or wait for one to end"
                ),
            }
            .into());
        }
        *counts.entry(caller.clone()).or_default() += 1;
        *counts.entry(address.clone()).or_default() += 1;
        Ok(StreamSlot {
            keys: [caller, address],
            counts: self.counts.clone(),
        })
    }

    /// How many places `key` (a caller, or `addr:ADDRESS`) holds now.
    pub fn held(&self, key: &str) -> usize {
        let counts = self.counts.lock().expect("stream counts lock");
        counts.get(key).copied().unwrap_or(0)
    }
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

/// Marks a response to a call that waited, for the metrics.
#[derive(Debug, Clone, Copy)]
pub struct Waited;

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

/// Whose cap a stream counts against: a user (any of their tokens and
/// browser sessions) or an agent's session.
pub fn caller_key(principal: Option<&Principal>, person: Option<&UserId>) -> String {
    match (principal, person) {
        (Some(Principal::User { user_id, .. }), _) | (None, Some(user_id)) => {
            format!("user:{user_id}")
        }
        (Some(Principal::Agent { session_id }), _) => format!("agent:{session_id}"),
        (None, None) => "anonymous".to_owned(),
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut counts = self.counts.lock().expect("stream counts lock");
        for key in &self.keys {
            if let Some(n) = counts.get_mut(key) {
                *n -= 1;
                if *n == 0 {
                    counts.remove(key);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_come_back_when_streams_end() {
        let open = OpenStreams::default();
        let held: Vec<_> = (0..PER_CALLER)
            .map(|_| open.open("user:a".into(), Some("1.1.1.1")).unwrap())
            .collect();
        assert!(open.open("user:a".into(), Some("2.2.2.2")).is_err());
        assert!(open.open("user:b".into(), Some("1.1.1.1")).is_ok());
        drop(held);
        assert!(open.counts.lock().unwrap().is_empty());
        assert!(open.open("user:a".into(), Some("1.1.1.1")).is_ok());
    }
}
