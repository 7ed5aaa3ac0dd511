//! A response that carries a widget's answer, and the acknowledgement of its
//! prompt once the connection took the whole body (see `delivery.rs`).

use std::sync::Arc;

use axum::Json;
use axum::body::{Body, Bytes};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;

use widgetd_domain::Core;
use widgetd_domain::widgets::engine::delivery::{Answered, Waited, acknowledge};

/// A REST response of what a call that waited got, whose prompt is
/// acknowledged once its body is sent.
pub fn waited(waited: Waited, state: &Arc<Core>, status: StatusCode) -> Response {
    let response = (status, Json(waited.body)).into_response();
    match waited.answered {
        Some(answered) => ack_when_sent(state.clone(), response, answered),
        None => response,
    }
}

/// Wraps `response` so that `answered`'s prompt is acknowledged after the
/// last byte of the body was taken by the connection; a body dropped before
/// that (the client went away) acknowledges nothing.
pub fn ack_when_sent(state: Arc<Core>, response: Response, answered: Answered) -> Response {
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
