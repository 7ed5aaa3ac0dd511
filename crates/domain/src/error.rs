//! The domain's one error type.
//!
//! Every refusal carries a stable, machine-readable code (`not_found`,
//! `widget_not_pending`, …) and a message written by us that names what to
//! fix; none of them ever contains a submitted value. The error knows
//! nothing of HTTP or MCP: each edge maps its [`Class`] to its own form
//! (the server's `WebError` to a status code and a JSON body, MCP to a tool
//! error), in one place each.

use crate::crypto::CryptoError;

/// What went wrong in the domain.
#[derive(Debug, thiserror::Error)]
pub enum Error {
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
    /// A widget left `pending` already; the answer carries its status, as
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

/// Result alias of the domain.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What kind of failure an error is, for an edge to answer it its own way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// The input could not be read.
    BadRequest,
    /// The input was read and refused.
    Invalid,
    /// No live credential.
    Unauthenticated,
    /// A credential that may not do this.
    Forbidden,
    /// Nothing the caller may see.
    NotFound,
    /// Not in a state that allows it (or created at the same moment elsewhere).
    Conflict,
    /// Too many at once, or too often: retry later.
    TooMany,
    /// The database could not do it for now: retry after the given seconds.
    Unavailable,
    /// A failure of widgetd's; the details are in the log only.
    Internal,
}

const CORRUPT_MESSAGE: &str = "widgetd's database is damaged, so this was not answered \
    (nothing was changed and no data from the damaged part is served). The operator should stop \
    widgetd and run `widgetd check`, which says what is damaged and what to do";

/// Two writers created the same thing at once (the CLI beside the daemon,
/// or two daemons on PostgreSQL): the database's unique index stops the
/// second, which is a conflict, not a failure of widgetd's.
const ALREADY_EXISTS_MESSAGE: &str = "that already exists: another request created it at the \
    same moment. Reload to see it, or choose another name";

/// Why the database could not do a request for now: each is answered as
/// `storage_unavailable` with its own message and a time to retry after.
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
    fn retry_after(self) -> u64 {
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
    fn log(self, err: &Error) {
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

impl Error {
    /// A refusal of readable input, with a stable code and a message that
    /// says what to fix.
    pub fn invalid(code: &'static str, message: impl Into<String>) -> Self {
        Self::Invalid {
            code,
            message: message.into(),
        }
    }

    /// A conflict with the current state, with a stable code.
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::Conflict {
            code,
            message: message.into(),
        }
    }

    /// What kind of failure this is.
    pub fn class(&self) -> Class {
        self.class_and_code().0
    }

    /// The stable code every edge answers with.
    pub fn code(&self) -> &'static str {
        self.class_and_code().1
    }

    fn class_and_code(&self) -> (Class, &'static str) {
        match self {
            Self::BadRequest { code, .. } => (Class::BadRequest, code),
            Self::Invalid { code, .. } => (Class::Invalid, code),
            Self::Unauthenticated { code, .. } => (Class::Unauthenticated, code),
            Self::Forbidden(_) => (Class::Forbidden, "forbidden"),
            Self::NotFound(_) => (Class::NotFound, "not_found"),
            Self::Conflict { code, .. } => (Class::Conflict, code),
            Self::WidgetNotPending(_) => (Class::Conflict, "widget_not_pending"),
            Self::RateLimited(_) => (Class::TooMany, "rate_limited"),
            Self::TooMany { code, .. } => (Class::TooMany, code),
            _ if self.unavailable().is_some() => (Class::Unavailable, "storage_unavailable"),
            Self::Database(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                (Class::Conflict, "already_exists")
            }
            Self::Database(e) if crate::db::is_corrupt(e) => (Class::Internal, "database_corrupt"),
            Self::Crypto(_) | Self::Database(_) | Self::Internal(_) => {
                (Class::Internal, "internal")
            }
        }
    }

    /// Whether the database could not do this for now
    /// (`storage_unavailable`): a retry may well succeed.
    pub fn is_unavailable(&self) -> bool {
        self.unavailable().is_some()
    }

    /// Seconds the caller should wait before trying again: a rate limit's,
    /// or the database's when it could not do this for now.
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            Self::RateLimited(secs) => Some((*secs).max(1)),
            _ => self.unavailable().map(Unavailable::retry_after),
        }
    }

    /// The status a refused widget answer found (`widget_not_pending`).
    pub fn widget_status(&self) -> Option<&'static str> {
        match self {
            Self::WidgetNotPending(status) => Some(status),
            _ => None,
        }
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

    /// The message the caller is told. A failure of widgetd's own is
    /// logged here, with its details, and told generically; a refusal is
    /// told as written.
    pub fn public_message(&self) -> String {
        let (class, code) = self.class_and_code();
        if let Some(why) = self.unavailable() {
            why.log(self);
            why.message().to_owned()
        } else if code == "already_exists" {
            // The constraint's own text names tables and columns: not for
            // the client.
            ALREADY_EXISTS_MESSAGE.to_owned()
        } else if code == "database_corrupt" {
            tracing::error!(error = %self, "the database file is damaged; run `widgetd check`");
            CORRUPT_MESSAGE.to_owned()
        } else if class == Class::Internal {
            // Bound parameters never appear in these errors, so logging them is
            // safe; the client learns only that something failed on our side.
            tracing::error!(error = %self, "request failed");
            "internal error; the server log has the details".to_owned()
        } else {
            self.to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::Connection;

    /// A unique index that stops the second of two concurrent creations is
    /// a conflict, told without the constraint's table and column names.
    #[tokio::test]
    async fn a_unique_violation_is_a_conflict_that_names_no_table() {
        let mut conn = sqlx::SqliteConnection::connect("sqlite::memory:")
            .await
            .unwrap();
        sqlx::query("CREATE TABLE people (name TEXT NOT NULL UNIQUE)")
            .execute(&mut conn)
            .await
            .unwrap();
        let insert = "INSERT INTO people (name) VALUES ('ada')";
        sqlx::query(insert).execute(&mut conn).await.unwrap();
        let err = Error::from(sqlx::query(insert).execute(&mut conn).await.unwrap_err());
        assert_eq!(err.class(), Class::Conflict);
        assert_eq!(err.code(), "already_exists");
        let message = err.public_message();
        assert!(!message.contains("people"), "{message}");
        assert!(!message.contains("name TEXT"), "{message}");
    }

    /// A write that met SQLite's lock held by another process beyond
    /// `busy_timeout` passes: it is unavailable for a second, told as the
    /// database stopping it, never as an internal failure.
    #[tokio::test]
    async fn a_lock_held_elsewhere_too_long_is_unavailable_for_a_second() {
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
            Error::from(refused.remove(0)),
            Error::Internal(anyhow::Error::new(refused.remove(0)).context("creating a widget")),
            Error::Database(sqlx::Error::Io(told)),
        ] {
            assert_eq!(err.class(), Class::Unavailable);
            assert_eq!(err.code(), "storage_unavailable");
            assert_eq!(err.retry_after(), Some(1));
            let message = err.public_message();
            assert!(message.contains("stopped this request"), "{message}");
        }
    }
}
