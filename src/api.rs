//! Shared pieces of the JSON API: the body extractor whose errors never echo
//! what the client sent (the parsing itself is `crate::input`'s).

use axum::body::Bytes;
use axum::extract::{FromRequest, OptionalFromRequest, Request};
use axum::http::header::CONTENT_TYPE;
use serde::de::DeserializeOwned;

use crate::error::{AppError, AppResult};
use crate::input::parse_json;

/// Like `axum::Json`, but a rejection says what is wrong and where (field
/// path, line, column) without quoting any of the input: axum's own rejection
/// repeats values, and a value here may be a secret.
pub struct ApiJson<T>(pub T);

fn bad_request(code: &'static str, message: impl Into<String>) -> AppError {
    AppError::BadRequest {
        code,
        message: message.into(),
    }
}

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = AppError;

    async fn from_request(req: Request, state: &S) -> AppResult<Self> {
        let is_json = req
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(is_json_type);
        if !is_json {
            return Err(bad_request(
                "json_expected",
                "send the body as JSON with `Content-Type: application/json`",
            ));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|_| {
            bad_request(
                "body_unreadable",
                "the request body could not be read (is it over 2 MiB?)",
            )
        })?;
        parse_json(&bytes).map(Self)
    }
}

impl<T: DeserializeOwned, S: Send + Sync> OptionalFromRequest<S> for ApiJson<T> {
    type Rejection = AppError;

    /// An absent body (no content type, nothing sent) is `None`.
    async fn from_request(req: Request, state: &S) -> AppResult<Option<Self>> {
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
