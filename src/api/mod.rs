//! The JSON API under `/api/v1` (and Slack's signed endpoints): one router
//! per domain noun, merged by [`router`], and what they share: the body
//! extractor whose errors never echo what the client sent (the parsing
//! itself is `widgetd_domain::input`'s) and the domain types taken straight
//! from a request (`extract.rs`).

pub mod env;
pub mod events;
mod extract;

pub use extract::client_of;
pub mod prompts;
pub mod sessions;
pub mod slack;
pub mod transcript;
pub mod webhooks;
pub mod widgets;

use axum::Router;

use axum::body::Bytes;
use axum::extract::{FromRequest, OptionalFromRequest, Request};
use axum::http::header::CONTENT_TYPE;
use serde::de::DeserializeOwned;

use crate::error::{WebError, WebResult};
use crate::state::AppState;
use widgetd_domain::Error;
use widgetd_domain::input::parse_json;

/// Every API route (the browser's pages are `crate::web`'s).
pub fn router() -> Router<AppState> {
    Router::new()
        .merge(sessions::router())
        .merge(env::router())
        .merge(widgets::router())
        .merge(prompts::router())
        .merge(events::router())
        .merge(transcript::router())
        .merge(webhooks::router())
        .merge(slack::router())
}

/// Like `axum::Json`, but a rejection says what is wrong and where (field
/// path, line, column) without quoting any of the input: axum's own rejection
/// repeats values, and a value here may be a secret.
pub struct ApiJson<T>(pub T);

fn bad_request(code: &'static str, message: impl Into<String>) -> Error {
    Error::BadRequest {
        code,
        message: message.into(),
    }
}

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = WebError;

    async fn from_request(req: Request, state: &S) -> WebResult<Self> {
        let is_json = req
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(is_json_type);
        if !is_json {
            return Err(bad_request(
                "json_expected",
                "send the body as JSON with `Content-Type: application/json`",
            )
            .into());
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|_| {
            bad_request(
                "body_unreadable",
                "the request body could not be read (is it over 2 MiB?)",
            )
        })?;
        Ok(parse_json(&bytes).map(Self)?)
    }
}

impl<T: DeserializeOwned, S: Send + Sync> OptionalFromRequest<S> for ApiJson<T> {
    type Rejection = WebError;

    /// An absent body (no content type, nothing sent) is `None`.
    async fn from_request(req: Request, state: &S) -> WebResult<Option<Self>> {
        if req.headers().get(CONTENT_TYPE).is_none() {
            return Ok(None);
        }
        <Self as FromRequest<S>>::from_request(req, state)
            .await
            .map(Some)
    }
}

/// `application/json`, with parameters (`; charset=utf-8`) or not; not
/// `application/jsonfoo`.
fn is_json_type(value: &str) -> bool {
    value
        .split(';')
        .next()
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

#[cfg(test)]
mod tests {
    use super::is_json_type;

    #[test]
    fn only_the_json_type_is_json() {
        assert!(is_json_type("application/json"));
        assert!(is_json_type("Application/JSON; charset=utf-8"));
        assert!(!is_json_type("application/jsonxyz"));
        assert!(!is_json_type("text/plain; application/json"));
    }
}
