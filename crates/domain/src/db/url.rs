//! `--database-url`: which database a daemon uses, told so that a password
//! in a PostgreSQL URL never reaches a log line or an error message.

use std::path::PathBuf;

use anyhow::bail;

/// Where the data lives: a SQLite file, or a PostgreSQL database.
#[derive(Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    Sqlite(PathBuf),
    /// The URL as given, password included: only ever handed to sqlx.
    Postgres(String),
}

impl DatabaseUrl {
    /// Parses `sqlite://PATH` (or `sqlite:PATH`) and `postgres://…`
    /// (or `postgresql://…`).
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        if let Some(path) = text
            .strip_prefix("sqlite://")
            .or_else(|| text.strip_prefix("sqlite:"))
        {
            if path.is_empty() || path.contains('?') {
                bail!("a SQLite database URL is sqlite://PATH, with a file path and no options");
            }
            return Ok(Self::Sqlite(PathBuf::from(path)));
        }
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            if url::Url::parse(text).is_err() {
                bail!(
                    "the PostgreSQL URL does not parse: expected postgres://USER@HOST:PORT/DATABASE"
                );
            }
            return Ok(Self::Postgres(text.to_owned()));
        }
        bail!("the database URL must start with sqlite:// or postgres://");
    }

    /// The URL without its password, for messages.
    pub fn redacted(&self) -> String {
        match self {
            Self::Sqlite(path) => format!("sqlite://{}", path.display()),
            Self::Postgres(text) => match url::Url::parse(text) {
                Ok(mut url) => {
                    if url.password().is_some() {
                        let _ = url.set_password(Some("***"));
                    }
                    url.to_string()
                }
                Err(_) => "postgres://…".to_owned(),
            },
        }
    }
}

impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl std::fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_and_never_show_a_password() {
        let url = DatabaseUrl::parse("postgres://app:s3cret@db.example:5432/widgetd").unwrap();
        assert_eq!(url.redacted(), "postgres://app:***@db.example:5432/widgetd");
        assert!(!format!("{url:?} {url}").contains("s3cret"));
        assert_eq!(
            DatabaseUrl::parse("sqlite:///var/lib/w/widgetd.db").unwrap(),
            DatabaseUrl::Sqlite("/var/lib/w/widgetd.db".into())
        );
        assert!(DatabaseUrl::parse("mysql://x").is_err());
        assert!(DatabaseUrl::parse("sqlite://").is_err());
    }
}
