//! The one error type of the HTTP surface.
//!
//! Every error leaves as `{"error": {"code", "message"}}` with a stable,
//! machine-readable `code`. Messages are written by us and name what to fix;
//! none of them ever contains a submitted value. Internal failures are logged
//! and answered with a generic message.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::crypto::CryptoError;

/// An error answered to an HTTP client.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The request could not be read (not JSON, malformed, wrong shape).
    #[error("{message}")]
    BadRequest { code: &'static str, message: String },
    /// The request was understood but its content is not acceptable.
    #[error("{message}")]
    Invalid { code: &'static str, message: String },
    /// No credential, or one that does not resolve to a live principal.
    #[error("{message}")]
    Unauthenticated { code: &'static str, message: String },
    /// A valid credential that may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// A cookie-authenticated change that did not come from our own pages.
    #[error("{message}")]
    Csrf { code: &'static str, message: String },
    /// The resource does not exist or the caller may not know it does.
    #[error("{0} not found")]
    NotFound(&'static str),
    /// The resource is not in a state that allows this.
    #[error("{message}")]
    Conflict { code: &'static str, message: String },
    /// Too many of something open at once (event streams, long-polls).
    #[error("{message}")]
    TooMany { code: &'static str, message: String },
    /// Too many requests from one caller; retry after this many seconds.
    #[error("too many requests; retry in {0} s")]
    RateLimited(u64),
    /// A widget left `pending` already; the body carries its status, as
    /// its stable text (`submitted`, `expired`, …).
    #[error("the widget is already {0}; nothing was changed")]
    WidgetNotPending(&'static str),
    /// A ciphertext did not decrypt: data was tampered with or the key is wrong.
    #[error(transparent)]
    Crypto(#[from] CryptoError),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl AppError {
    /// A 422 with a stable code and a message that says what to fix.
    pub fn invalid(code: &'static str, message: impl Into<String>) -> Self {
        Self::Invalid {
            code,
            message: message.into(),
        }
    }

    fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            Self::BadRequest { code, .. } => (StatusCode::BAD_REQUEST, code),
            Self::Invalid { code, .. } => (StatusCode::UNPROCESSABLE_ENTITY, code),
            Self::Unauthenticated { code, .. } => (StatusCode::UNAUTHORIZED, code),
            Self::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
            Self::Csrf { code, .. } => (StatusCode::FORBIDDEN, code),
            Self::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            Self::Conflict { code, .. } => (StatusCode::CONFLICT, code),
            Self::WidgetNotPending(_) => (StatusCode::CONFLICT, "widget_not_pending"),
            Self::RateLimited(_) => (StatusCode::TOO_MANY_REQUESTS, "rate_limited"),
            Self::TooMany { code, .. } => (StatusCode::TOO_MANY_REQUESTS, code),
            _ if self.unavailable().is_some() => {
                (StatusCode::SERVICE_UNAVAILABLE, "storage_unavailable")
            }
            Self::Database(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                (StatusCode::CONFLICT, "already_exists")
            }
            Self::Database(e) if crate::db::is_corrupt(e) => {
                (StatusCode::INTERNAL_SERVER_ERROR, "database_corrupt")
            }
            Self::Crypto(_) | Self::Database(_) | Self::Internal(_) => {
                (StatusCode::INTERNAL_SERVER_ERROR, "internal")
            }
        }
    }
}

const CORRUPT_MESSAGE: &str = "widgetd's database is damaged, so this was not answered \
    (nothing was changed and no data from the damaged part is served). The operator should stop \
    widgetd and run `widgetd check`, which says what is damaged and what to do";

/// Two writers created the same thing at once (the CLI beside the daemon,
/// or two daemons on PostgreSQL): the database's unique index stops the
/// second, which is a conflict, not a failure of widgetd's.
const ALREADY_EXISTS_MESSAGE: &str = "that already exists: another request created it at the \
    same moment. Reload to see it, or choose another name";

/// Why the database could not do a request for now: each is answered
/// `503 storage_unavailable` with its own message and `Retry-After`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unavailable {
    /// A full or read-only disk ([`crate::db::storage_unavailable`]): an
    /// operator has to act.
    Storage,
    /// The connection was lost ([`crate::db::connection_lost`]): widgetd
    /// reconnects at once.
    Connection,
    /// The database stopped the statement ([`crate::db::interrupted`]): a
    /// timeout, a cancel or a broken deadlock.
    Interrupted,
}

impl Unavailable {
    fn of(err: &sqlx::Error) -> Option<Self> {
        if crate::db::storage_unavailable(err) {
            Some(Self::Storage)
        } else if crate::db::connection_lost(err) {
            Some(Self::Connection)
        } else if crate::db::interrupted(err) {
            Some(Self::Interrupted)
        } else {
            None
        }
    }

    /// Seconds the client is asked to wait.
    fn retry_after(self) -> u32 {
        match self {
            Self::Storage => 30,
            Self::Connection | Self::Interrupted => 1,
        }
    }

    /// What the client is told: what happened, and what to do.
    fn message(self) -> &'static str {
        match self {
            Self::Storage => {
                "widgetd could not write to its database: the disk is full or read-only. Nothing \
                 was changed; retry once the operator has freed space or made the data dir \
                 writable (reads keep working)"
            }
            Self::Connection => {
                "widgetd lost its connection to the database (restarted or unreachable), so this \
                 may not have been done. It reconnects by itself: retry in a moment"
            }
            Self::Interrupted => {
                "the database stopped this request before it finished (a statement or lock \
                 timeout, a cancel by its administrator, a deadlock it broke, or another process \
                 holding its lock), so it may not have been done. Retry in a moment"
            }
        }
    }

    /// The line the server log gets, with the database's own error.
    fn log(self, err: &AppError) {
        match self {
            Self::Storage => tracing::error!(error = %err, "the database could not be written"),
            Self::Connection => {
                tracing::error!(error = %err, "the database connection was lost");
            }
            Self::Interrupted => {
                tracing::error!(error = %err, "the database stopped a statement before it finished");
            }
        }
    }
}

impl AppError {
    /// Whether the database could not do this for now (`503
    /// storage_unavailable`): a retry may well succeed.
    pub fn is_unavailable(&self) -> bool {
        self.unavailable().is_some()
    }

    /// Why the database could not do this for now, if that is what failed,
    /// directly or under a wrapped error.
    fn unavailable(&self) -> Option<Unavailable> {
        match self {
            Self::Database(e) => Unavailable::of(e),
            Self::Internal(e) => e
                .chain()
                .filter_map(|c| c.downcast_ref::<sqlx::Error>())
                .find_map(Unavailable::of),
            _ => None,
        }
    }

    /// The status and the `{"error": {…}}` body of this error. Internal
    /// failures are logged here and get a generic message.
    pub fn to_body(&self) -> (StatusCode, serde_json::Value) {
        let (status, code) = self.status_and_code();
        let message = if let Some(why) = self.unavailable() {
            why.log(self);
            why.message().to_owned()
        } else if code == "already_exists" {
            // The constraint's own text names tables and columns: not for
            // the client.
            ALREADY_EXISTS_MESSAGE.to_owned()
        } else if code == "database_corrupt" {
            tracing::error!(error = %self, "the database file is damaged; run `widgetd check`");
            CORRUPT_MESSAGE.to_owned()
        } else if status.is_server_error() {
            // Bound parameters never appear in these errors, so logging them is
            // safe; the client learns only that something failed on our side.
            tracing::error!(error = %self, "request failed");
            "internal error; the server log has the details".to_owned()
        } else {
            self.to_string()
        };
        let mut body = json!({ "error": { "code": code, "message": message } });
        if let Self::WidgetNotPending(current) = self {
            body["error"]["status"] = json!(current);
        }
        (status, body)
    }
}

/// The stable code of an error response, kept on the response for the
/// request log and the metrics (never a message, which may name things).
#[derive(Debug, Clone)]
pub struct ErrorCode(pub String);

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let (status, body) = self.to_body();
        let retry = self.unavailable().map(Unavailable::retry_after);
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
        if let Some(secs) = retry {
            response.headers_mut().insert("retry-after", secs.into());
        }
        if let Self::RateLimited(secs) = self {
            response
                .headers_mut()
                .insert("retry-after", secs.max(1).into());
        }
        response
    }
}

/// Result alias for handlers and domain functions reached from HTTP.
pub type AppResult<T> = Result<T, AppError>;

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::Connection;

    /// A unique index that stops the second of two concurrent creations is
    /// a conflict, told without the constraint's table and column names.
    #[tokio::test]
    async fn a_unique_violation_is_a_409_that_names_no_table() {
        let mut conn = sqlx::SqliteConnection::connect("sqlite::memory:")
            .await
            .unwrap();
        sqlx::query("CREATE TABLE people (name TEXT NOT NULL UNIQUE)")
            .execute(&mut conn)
            .await
            .unwrap();
        let insert = "INSERT INTO people (name) VALUES ('ada')";
        sqlx::query(insert).execute(&mut conn).await.unwrap();
        let err = sqlx::query(insert).execute(&mut conn).await.unwrap_err();
        let (status, body) = AppError::from(err).to_body();
        assert_eq!(status, StatusCode::CONFLICT);
        assert_eq!(body["error"]["code"], "already_exists");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(!message.contains("people"), "{message}");
        assert!(!message.contains("name TEXT"), "{message}");
    }

    /// A write that met SQLite's lock held by another process beyond
    /// `busy_timeout` passes: it is answered 503 with a short
    /// `Retry-After`, told as the database stopping it, never as a 500.
    #[tokio::test]
    async fn a_lock_held_elsewhere_too_long_is_a_503_to_retry_soon() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("db").display());
        let mut holder = sqlx::SqliteConnection::connect(&url).await.unwrap();
        sqlx::query("BEGIN IMMEDIATE")
            .execute(&mut holder)
            .await
            .unwrap();
        let mut writer = sqlx::SqliteConnection::connect(&url).await.unwrap();
        sqlx::query("PRAGMA busy_timeout = 0")
            .execute(&mut writer)
            .await
            .unwrap();
        let mut refused = Vec::new();
        for _ in 0..2 {
            let err = sqlx::query("BEGIN IMMEDIATE")
                .execute(&mut writer)
                .await
                .unwrap_err();
            assert!(crate::db::interrupted(&err), "{err}");
            refused.push(err);
        }
        // Directly, wrapped as the write paths wrap it, and as the SQLite
        // writer tells the members of a batch that failed so.
        let told = std::io::Error::new(std::io::ErrorKind::ResourceBusy, "database is locked");
        for err in [
            AppError::from(refused.remove(0)),
            AppError::Internal(anyhow::Error::new(refused.remove(0)).context("creating a widget")),
            AppError::Database(sqlx::Error::Io(told)),
        ] {
            let (status, body) = err.to_body();
            assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(body["error"]["code"], "storage_unavailable");
            let message = body["error"]["message"].as_str().unwrap();
            assert!(message.contains("stopped this request"), "{message}");
            let response = err.into_response();
            assert_eq!(response.headers()["retry-after"], "1");
        }
    }
}
