//! `GET /api/v1/sessions/{id}/events`: Server-Sent Events, resumable with
//! `Last-Event-ID`. Payloads are the sanitized event rows: names, statuses,
//! transcript text; never a value.

use std::convert::Infallible;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::routing::get;
use futures_util::Stream;
use tokio::sync::mpsc;

use super::since;
use crate::AppState;
use crate::access::{self, Caller, Need};
use crate::auth::Principal;
use crate::error::{AppError, AppResult};
use crate::ids::SessionId;
use crate::sessions::Session;
use crate::web::CurrentUser;

const BATCH: i64 = 500;

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
) -> AppResult<Session> {
    if let Some(principal) = principal {
        return access::authorize(state, principal.into(), id, Need::Watch).await;
    }
    let user = user.ok_or(AppError::Unauthenticated {
        code: "missing_token",
        message: "send `Authorization: Bearer <token>` or log in".into(),
    })?;
    access::authorize(state, Caller::Person(&user.id), id, Need::Watch).await
}

async fn stream_events(
    State(state): State<AppState>,
    principal: Option<Principal>,
    user: Option<CurrentUser>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> AppResult<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>> {
    let session = watchable_session(&state, principal.as_ref(), user.as_ref(), &id).await?;
    let last_id = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<i64>().ok())
        .unwrap_or(0);
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(follow(state, session.id, last_id, tx));
    let stream =
        futures_util::stream::unfold(
            rx,
            |mut rx| async move { rx.recv().await.map(|e| (Ok(e), rx)) },
        );
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// Sends what is in the database after `last`, then waits for the hub and
/// repeats, until the client goes away or the daemon shuts down.
async fn follow(state: AppState, session: SessionId, mut last: i64, tx: mpsc::Sender<SseEvent>) {
    let _open = crate::ops::StreamOpen::new();
    let mut listener = state.hub.subscribe();
    loop {
        let batch = match state.db.read.acquire().await {
            Ok(mut conn) => since(&mut conn, &session, last, BATCH).await,
            Err(e) => Err(e),
        };
        let Ok(batch) = batch else { return };
        let full = batch.len() as i64 == BATCH;
        for event in batch {
            last = event.id;
            let sse = SseEvent::default()
                .id(event.id.to_string())
                .event(event.kind)
                .data(event.payload);
            if tx.send(sse).await.is_err() {
                return;
            }
        }
        if full {
            continue;
        }
        tokio::select! {
            more = listener.changed(&session) => if !more { return },
            _ = tx.closed() => return,
        }
    }
}
