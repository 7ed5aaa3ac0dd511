//! Links between widgetd users and Slack users. A person signed in to
//! widgetd asks for a one-time code and sends it from Slack
//! (`/widgetd link CODE`, a request Slack signs): both sides are proven, so
//! the link is theirs. Nothing sent from Slack alone makes a link.

use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};
use sqlx::AnyConnection;

use widgetd_domain::clock;
use widgetd_domain::crypto::random_bytes;
use widgetd_domain::error::{Error, Result};
use widgetd_domain::ids::UserId;

/// How long a code may be used.
pub const CODE_TTL_MS: i64 = 10 * 60 * 1000;
/// Unambiguous letters and digits (no 0/O, 1/I/L).
const ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";
const CODE_CHARS: usize = 10;

/// A person's link.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Link {
    pub user_id: UserId,
    pub team_id: String,
    pub slack_user_id: String,
    pub linked_at: i64,
}

/// A code to send from Slack, shown once.
pub struct LinkCode {
    pub code: SecretString,
    pub expires_at: i64,
}

fn code_hash(code: &str) -> Vec<u8> {
    let normal: String = code
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_uppercase())
        .collect();
    Sha256::digest(normal.as_bytes()).to_vec()
}

/// A new code for `user`, replacing any earlier one.
pub async fn new_link_code(conn: &mut AnyConnection, user: &UserId) -> sqlx::Result<LinkCode> {
    let raw = random_bytes::<CODE_CHARS>();
    let code: String = raw
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect();
    let expires_at = clock::now_ms() + CODE_TTL_MS;
    sqlx::query("DELETE FROM slack_link_codes WHERE user_id = $1 OR expires_at < $2")
        .bind(user)
        .bind(clock::now_ms())
        .execute(&mut *conn)
        .await?;
    sqlx::query(
        "INSERT INTO slack_link_codes (code_hash, user_id, expires_at) VALUES ($1, $2, $3)",
    )
    .bind(code_hash(&code))
    .bind(user)
    .bind(expires_at)
    .execute(conn)
    .await?;
    Ok(LinkCode {
        code: code.into(),
        expires_at,
    })
}

/// Uses a code sent from Slack by `slack_user` of `team`: links them to the
/// person who asked for it. The code is spent whatever happens next. A
/// Slack user linked to someone else is refused.
pub async fn redeem_code(
    conn: &mut AnyConnection,
    code: &SecretString,
    team: &str,
    slack_user: &str,
) -> Result<UserId> {
    let hash = code_hash(code.expose_secret());
    let found: Option<(UserId, i64)> =
        sqlx::query_as("SELECT user_id, expires_at FROM slack_link_codes WHERE code_hash = $1")
            .bind(&hash)
            .fetch_optional(&mut *conn)
            .await?;
    let unknown = || {
        Error::invalid(
            "unknown_link_code",
            "that code is unknown, used or expired; ask widgetd's Slack settings for a new one",
        )
    };
    let (user, expires_at) = found.ok_or_else(unknown)?;
    sqlx::query("DELETE FROM slack_link_codes WHERE code_hash = $1")
        .bind(&hash)
        .execute(&mut *conn)
        .await?;
    if expires_at < clock::now_ms() {
        return Err(unknown());
    }
    if let Some(other) = link_of_slack_user(conn, team, slack_user).await?
        && other.user_id != user
    {
        return Err(Error::Conflict {
            code: "slack_user_linked",
            message: "this Slack user is linked to another widgetd user; unlink it there first"
                .into(),
        });
    }
    unlink(conn, &user).await?;
    // Whether a widget's change is queued for Slack at all is kept under
    // the auth epoch (`auth/cache.rs`, `notify::Wanted`).
    widgetd_domain::auth::bump_epoch(conn).await?;
    sqlx::query(
        "INSERT INTO slack_links (user_id, team_id, slack_user_id, linked_at) VALUES ($1, $2, $3, $4)",
    )
    .bind(&user)
    .bind(team)
    .bind(slack_user)
    .bind(clock::now_ms())
    .execute(conn)
    .await?;
    Ok(user)
}

/// Removes `user`'s link (and its messages still to be posted); returns
/// whether there was one.
pub async fn unlink(conn: &mut AnyConnection, user: &UserId) -> sqlx::Result<bool> {
    sqlx::query("DELETE FROM slack_messages WHERE user_id = $1 AND ts IS NULL")
        .bind(user)
        .execute(&mut *conn)
        .await?;
    let done = sqlx::query("DELETE FROM slack_links WHERE user_id = $1")
        .bind(user)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() > 0)
}

/// The link of a widgetd user.
pub async fn link_of_user(conn: &mut AnyConnection, user: &UserId) -> sqlx::Result<Option<Link>> {
    sqlx::query_as(
        "SELECT user_id, team_id, slack_user_id, linked_at FROM slack_links WHERE user_id = $1",
    )
    .bind(user)
    .fetch_optional(conn)
    .await
}

/// The link of a Slack user of a workspace.
pub async fn link_of_slack_user(
    conn: &mut AnyConnection,
    team: &str,
    slack_user: &str,
) -> sqlx::Result<Option<Link>> {
    sqlx::query_as(
        "SELECT user_id, team_id, slack_user_id, linked_at FROM slack_links \
         WHERE team_id = $1 AND slack_user_id = $2",
    )
    .bind(team)
    .bind(slack_user)
    .fetch_optional(conn)
    .await
}

#[cfg(test)]
mod tests {
    use super::code_hash;

    #[test]
    fn a_code_is_read_whatever_its_case_and_spacing() {
        assert_eq!(code_hash("ABCD-EF23"), code_hash(" abcdef23 "));
        assert_ne!(code_hash("ABCDEF23"), code_hash("ABCDEF24"));
    }
}
