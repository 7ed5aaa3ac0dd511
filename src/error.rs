//! The one place an error becomes an HTTP answer.
//!
//! Every error leaves as `{"error": {"code", "message"}}` with the domain's
//! stable `code` (`widgetd_domain::Error`), its status chosen here from the
//! error's [`Class`]; internal failures are logged and answered with a
//! generic message. The HTTP layer adds one refusal of its own: a
//! cookie-authenticated change that did not come from our own pages.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use widgetd_domain::Error;
use widgetd_domain::crypto::CryptoError;
use widgetd_domain::error::Class;

/// An error answered to an HTTP client.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    /// A refusal or a failure of the domain.
    #[error(transparent)]
    Domain(#[from] Error),
    /// A cookie-authenticated change that did not come from our own pages.
    #[error("{message}")]
    Csrf { code: &'static str, message: String },
}

/// Result alias of handlers and extractors.
pub type WebResult<T> = Result<T, WebError>;

impl From<sqlx::Error> for WebError {
    fn from(err: sqlx::Error) -> Self {
        Self::Domain(err.into())
    }
}

impl From<anyhow::Error> for WebError {
    fn from(err: anyhow::Error) -> Self {
        Self::Domain(err.into())
    }
}

impl From<CryptoError> for WebError {
    fn from(err: CryptoError) -> Self {
        Self::Domain(err.into())
    }
}

/// The status code of each class of domain error.
pub fn status_of(class: Class) -> StatusCode {
    match class {
        Class::BadRequest => StatusCode::BAD_REQUEST,
        Class::Invalid => StatusCode::UNPROCESSABLE_ENTITY,
        Class::Unauthenticated => StatusCode::UNAUTHORIZED,
        Class::Forbidden => StatusCode::FORBIDDEN,
        Class::NotFound => StatusCode::NOT_FOUND,
        Class::Conflict => StatusCode::CONFLICT,
        Class::TooMany => StatusCode::TOO_MANY_REQUESTS,
        Class::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        Class::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The status and the `{"error": {…}}` body of a domain error (internal
/// failures logged, with a generic message).
pub fn body_of(err: &Error) -> (StatusCode, serde_json::Value) {
    let mut body = json!({ "error": { "code": err.code(), "message": err.public_message() } });
    if let Some(current) = err.widget_status() {
        body["error"]["status"] = json!(current);
    }
    (status_of(err.class()), body)
}

impl WebError {
    /// A 422 with a stable code and a message that says what to fix.
    pub fn invalid(code: &'static str, message: impl Into<String>) -> Self {
        Self::Domain(Error::invalid(code, message))
    }

    /// The domain's error inside, if it is one.
    pub fn domain(&self) -> Option<&Error> {
        match self {
            Self::Domain(err) => Some(err),
            Self::Csrf { .. } => None,
        }
    }

    /// Whether the database could not do this for now (`503
    /// storage_unavailable`): a retry may well succeed.
    pub fn is_unavailable(&self) -> bool {
        self.domain().is_some_and(Error::is_unavailable)
    }

    /// The status and the `{"error": {…}}` body of this error. Internal
    /// failures are logged here and get a generic message.
    pub fn to_body(&self) -> (StatusCode, serde_json::Value) {
        match self {
            Self::Domain(err) => body_of(err),
            Self::Csrf { code, message } => (
                StatusCode::FORBIDDEN,
                json!({ "error": { "code": code, "message": message } }),
            ),
        }
    }
}

/// The stable code of an error response, kept on the response for the
/// request log and the metrics (never a message, which may name things).
#[derive(Debug, Clone)]
pub struct ErrorCode(pub String);

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        let (status, body) = self.to_body();
        let code = body["error"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let mut response = (status, Json(body)).into_response();
        response.extensions_mut().insert(ErrorCode(code));
        if status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert("www-authenticate", "Bearer".parse().expect("static header"));
        }
        if let Some(secs) = self.domain().and_then(Error::retry_after) {
            response.headers_mut().insert("retry-after", secs.into());
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each class has its status, and what a client is told to wait rides
    /// on `Retry-After`: a rate limit's seconds, at least one.
    #[test]
    fn classes_map_to_their_status_and_retries_are_told() {
        let cases = [
            (
                Error::NotFound("session"),
                StatusCode::NOT_FOUND,
                "not_found",
            ),
            (
                Error::invalid("invalid_name", "bad"),
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_name",
            ),
            (
                Error::WidgetNotPending("submitted"),
                StatusCode::CONFLICT,
                "widget_not_pending",
            ),
            (
                Error::RateLimited(0),
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
            ),
            (
                Error::Internal(anyhow::anyhow!("secret detail")),
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
            ),
        ];
        for (err, status, code) in cases {
            let err = WebError::from(err);
            let (got, body) = err.to_body();
            assert_eq!(got, status);
            assert_eq!(body["error"]["code"], code);
            assert!(!body.to_string().contains("secret detail"), "{body}");
            let response = err.into_response();
            if code == "rate_limited" {
                assert_eq!(response.headers()["retry-after"], "1");
            }
        }
        let (_, body) = WebError::from(Error::WidgetNotPending("expired")).to_body();
        assert_eq!(body["error"]["status"], "expired");
    }
}
