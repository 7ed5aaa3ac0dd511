//! `GET /api/v1/sessions/{id}/events`: Server-Sent Events, resumable with
//! `Last-Event-ID`. Payloads are the sanitized event rows: names, statuses,
//! transcript text; never a value.
//!
//! Access is checked when a stream opens and again on every wake-up and
//! every few seconds while it is open: a stream ends when its token is
//! revoked, its person logs out, changes password or is disabled, the
//! session's share is taken away, or the session is archived. While the
//! database cannot be reached (`503 storage_unavailable`), a stream sends
//! nothing and stays open, checking again every second: access is decided
//! before anything more is sent. No stream lives longer than an hour;
//! clients reconnect with `Last-Event-ID`.

use std::convert::Infallible;
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::routing::get;
use futures_util::Stream;

use crate::error::{WebError, WebResult};
use crate::state::AppState;
use crate::stream_limits::{StreamSlot, caller_key};
use crate::web::CurrentUser;
use widgetd_domain::Error;
use widgetd_domain::access::{self, Caller, Need};
use widgetd_domain::auth::Principal;
use widgetd_domain::events::{Event, Listener, since};
use widgetd_domain::ids::SessionId;
use widgetd_domain::ids::UserId;
use widgetd_domain::sessions::Session;

const BATCH: i64 = 500;
/// How often an open stream re-checks its caller's access when nothing woke it.
const RECHECK: Duration = Duration::from_secs(10);
/// The longest a stream stays open.
const MAX_LIFETIME: Duration = Duration::from_secs(3600);
/// How soon a stream tries again after the database could not be reached.
const UNAVAILABLE_RETRY: Duration = Duration::from_secs(1);

/// What a check of the watcher's access found.
enum Access {
    Allowed,
    Refused,
    /// The database could not be reached: nothing is known, nothing is sent.
    Unknown,
}

impl Access {
    /// A check that failed: refused, unless the database could not be
    /// reached.
    fn failed(e: &Error) -> Self {
        match e.is_unavailable() {
            true => Self::Unknown,
            false => Self::Refused,
        }
    }
}

/// Who is watching, kept to check again while the stream is open.
enum Watcher {
    /// A bearer token (agent or API), resolved afresh at each check.
    Token(secrecy::SecretString),
    /// A person, and the browser session (by its stored hash) they use.
    Person { user: UserId, session: Vec<u8> },
}

impl Watcher {
    /// Whether the watcher may still watch `session` (not archived).
    async fn still_allowed(&self, state: &AppState, session: &SessionId) -> Access {
        use secrecy::ExposeSecret;
        let id = session.as_str();
        let access = match self {
            Self::Token(token) => match Principal::resolve(state, token.expose_secret()).await {
                Ok(principal) => {
                    access::authorize(state, (&principal).into(), id, Need::Watch).await
                }
                Err(e) => return Access::failed(&e),
            },
            Self::Person { user, session } => {
                match widgetd_domain::auth::browser::is_live(&state.db, user, session).await {
                    Ok(true) => {}
                    Ok(false) => return Access::Refused,
                    Err(e) => return Access::failed(&e.into()),
                }
                access::authorize(state, Caller::Person(user), id, Need::Watch).await
            }
        };
        match access {
            Ok(session) if session.archived_at.is_none() => Access::Allowed,
            Ok(_) => Access::Refused,
            Err(e) => Access::failed(&e),
        }
    }
}

pub fn router() -> Router<AppState> {
    Router::new().route("/api/v1/sessions/{id}/events", get(stream_events))
}

/// The session, if the caller may watch it: its agent, its host, or its
/// creator signed in with the browser.
pub async fn watchable_session(
    state: &AppState,
    principal: Option<&Principal>,
    user: Option<&CurrentUser>,
    id: &str,
) -> WebResult<Session> {
    if let Some(principal) = principal {
        return Ok(access::authorize(state, principal.into(), id, Need::Watch).await?);
    }
    let user = user.ok_or(Error::Unauthenticated {
        code: "missing_token",
        message: "send `Authorization: Bearer <token>` or log in".into(),
    })?;
    Ok(access::authorize(state, Caller::Person(&user.id), id, Need::Watch).await?)
}

async fn stream_events(
    State(state): State<AppState>,
    principal: Option<Principal>,
    user: Option<CurrentUser>,
    cookie: tower_sessions::Session,
    client: widgetd_domain::audit::ClientAddr,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> WebResult<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>> {
    let session = watchable_session(&state, principal.as_ref(), user.as_ref(), &id).await?;
    let caller = caller_key(principal.as_ref(), user.as_ref().map(|u| &u.id));
    let slot = state.open_streams.open(caller, client.0.as_deref())?;
    let watcher = match (&principal, &user) {
        (Some(_), _) => {
            let token = headers
                .get(axum::http::header::AUTHORIZATION)
                .and_then(|h| h.to_str().ok())
                .and_then(|h| h.strip_prefix("Bearer "))
                .unwrap_or_default()
                .trim();
            Watcher::Token(token.to_owned().into())
        }
        (None, Some(user)) => Watcher::Person {
            user: user.id.clone(),
            session: cookie
                .id()
                .map(|id| crate::web::id_hash(&id))
                .unwrap_or_default(),
        },
        (None, None) => unreachable!("watchable_session admits no one without a credential"),
    };
    let last_id = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<i64>().ok())
        .unwrap_or(0);
    // No task and no queue of its own: the response body reads the
    // database when the connection asks for more, and waits on the
    // session's channel in the hub in between. It is dropped, slot and
    // subscription with it, when the client goes away or the stream ends.
    let follow = Follow {
        listener: state.hub.subscribe(&session.id),
        state,
        session: session.id,
        watcher,
        last: last_id,
        end: tokio::time::Instant::now() + MAX_LIFETIME,
        wait: false,
        retrying: false,
        queued: Vec::new().into_iter(),
        _slot: slot,
        _open: crate::ops::StreamOpen::new(),
    };
    let stream = futures_util::stream::unfold(follow, |mut follow| async move {
        follow.next().await.map(|e| (Ok(e), follow))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// One open stream: what it has sent, and what it waits for.
struct Follow {
    state: AppState,
    session: SessionId,
    watcher: Watcher,
    listener: Listener,
    /// The id of the last event sent.
    last: i64,
    end: tokio::time::Instant,
    /// Whether everything stored was sent, so the next read waits first.
    wait: bool,
    /// A read met an unreachable database: the next one follows at once,
    /// after access is checked again.
    retrying: bool,
    queued: std::vec::IntoIter<Event>,
    _slot: StreamSlot,
    _open: crate::ops::StreamOpen,
}

impl Follow {
    /// The next event: what is in the database after `last`; when all of
    /// it was sent, waits for the hub (re-checking access after each wait)
    /// and reads again. `None` ends the stream: the daemon shuts down, the
    /// watcher may no longer watch, or the stream reached its maximum
    /// lifetime.
    async fn next(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(event) = self.queued.next() {
                self.last = event.id;
                return Some(
                    SseEvent::default()
                        .id(event.id.to_string())
                        .event(event.kind)
                        .data(event.payload),
                );
            }
            if self.wait {
                if !std::mem::take(&mut self.retrying) {
                    tokio::select! {
                        more = self.listener.changed() => if !more { return None },
                        () = tokio::time::sleep(RECHECK) => {}
                        () = tokio::time::sleep_until(self.end) => return None,
                    }
                }
                loop {
                    if tokio::time::Instant::now() >= self.end {
                        return None;
                    }
                    match self.watcher.still_allowed(&self.state, &self.session).await {
                        Access::Allowed => break,
                        Access::Refused => return None,
                        Access::Unknown => self.pause().await?,
                    }
                }
            }
            let read = async {
                let mut conn = self.state.db.read.acquire().await?;
                since(&mut conn, &self.session, self.last, BATCH).await
            };
            match read.await.map_err(WebError::from) {
                Ok(batch) => {
                    // A full batch may have more behind it: read on without
                    // waiting.
                    self.wait = (batch.len() as i64) < BATCH;
                    self.queued = batch.into_iter();
                }
                Err(e) if e.is_unavailable() => {
                    // Access is checked again before the read is.
                    (self.wait, self.retrying) = (true, true);
                    self.pause().await?;
                }
                Err(_) => return None,
            }
        }
    }

    /// Waits a moment after the database could not be reached; `None`
    /// when the stream should end meanwhile (shutdown, its lifetime).
    async fn pause(&mut self) -> Option<()> {
        tokio::select! {
            () = tokio::time::sleep(UNAVAILABLE_RETRY) => Some(()),
            () = tokio::time::sleep_until(self.end) => None,
            more = self.listener.changed() => more.then_some(()),
        }
    }
}
