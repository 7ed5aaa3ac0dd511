//! Handing an answer to a waiting caller without losing it.
//!
//! A caller that used `wait_seconds` and got the answer in its response has
//! no need for the queued resume prompt, so that prompt is acknowledged —
//! but only once the response carrying the answer has been handed to the
//! connection in full. If the caller went away first (a dropped connection,
//! an MCP `notifications/cancelled`, a client-side timeout), the prompt stays
//! queued and the agent host delivers it: at least once, never zero times.

use axum::Json;
use axum::body::{Body, Bytes};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde_json::Value;

use crate::AppState;
use crate::ids::{SessionId, WidgetId};
use crate::prompts;

/// The widget whose prompt a response carries the answer of.
#[derive(Debug, Clone)]
pub struct Answered {
    pub session: SessionId,
    pub widget: WidgetId,
}

/// What a caller that may have waited gets back.
#[derive(Debug)]
pub struct Waited {
    /// The tool result / response body.
    pub body: Value,
    /// Set when `body` carries the outcome of the widget.
    pub answered: Option<Answered>,
}

impl Waited {
    /// A REST response whose prompt is acknowledged once its body is sent.
    pub fn into_response(self, state: &AppState, status: StatusCode) -> Response {
        let response = (status, Json(self.body)).into_response();
        match self.answered {
            Some(answered) => ack_when_sent(state.clone(), response, answered),
            None => response,
        }
    }
}

/// Wraps `response` so that `answered`'s prompt is acknowledged after the
/// last byte of the body was taken by the connection; a body dropped before
/// that (the client went away) acknowledges nothing.
pub fn ack_when_sent(state: AppState, response: Response, answered: Answered) -> Response {
    on_body_end(response, move |sent| {
        if sent {
            tokio::spawn(async move { acknowledge(&state, &answered).await });
        }
    })
}

/// Calls `then(true)` once the connection has taken the whole body of
/// `response`, or `then(false)` if the body is dropped before that.
pub fn on_body_end(response: Response, then: impl FnOnce(bool) + Send + 'static) -> Response {
    struct Guard<F: FnOnce(bool)> {
        then: Option<F>,
        sent: bool,
    }
    impl<F: FnOnce(bool)> Drop for Guard<F> {
        fn drop(&mut self) {
            if let Some(then) = self.then.take() {
                then(self.sent);
            }
        }
    }
    let mut guard = Guard {
        then: Some(then),
        sent: false,
    };
    let (parts, body) = response.into_parts();
    // Polled only after every frame before it was taken.
    let tail = futures_util::stream::once(async move {
        guard.sent = true;
        drop(guard);
        Ok::<_, axum::Error>(Bytes::new())
    });
    let body = Body::from_stream(body.into_data_stream().chain(tail));
    Response::from_parts(parts, body)
}

/// Marks the widget's prompt delivered. A failure only means the host
/// delivers it once more, so it is logged and not retried.
pub async fn acknowledge(state: &AppState, answered: &Answered) {
    let result = async {
        let mut tx = state.db.begin_write().await?;
        prompts::ack_widget(&mut tx, &answered.session, &answered.widget).await?;
        tx.commit().await
    }
    .await;
    if let Err(err) = result {
        tracing::warn!(error = %err, "a prompt handed to a waiting caller stays queued");
    }
}
