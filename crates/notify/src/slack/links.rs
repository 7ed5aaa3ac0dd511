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

/// The characters random `bytes` draw, each letter of [`ALPHABET`]
/// equally likely: a byte past the largest multiple of the alphabet's size
/// (248 = 8 × 31) draws none, rather than adding to the first eight
/// letters' odds as `byte % 31` would.
fn drawn(bytes: &[u8]) -> impl Iterator<Item = char> + '_ {
    let size = ALPHABET.len();
    let usable = 256 - 256 % size;
    bytes
        .iter()
        .map(|b| usize::from(*b))
        .filter(move |b| *b < usable)
        .map(move |b| char::from(ALPHABET[b % size]))
}

/// [`CODE_CHARS`] characters drawn uniformly from [`ALPHABET`].
fn random_code() -> String {
    let mut code = String::with_capacity(CODE_CHARS);
    while code.len() < CODE_CHARS {
        let bytes = random_bytes::<16>();
        code.extend(drawn(bytes.as_slice()).take(CODE_CHARS - code.len()));
    }
    code
}

/// A new code for `user`, replacing any earlier one.
pub async fn new_link_code(conn: &mut AnyConnection, user: &UserId) -> sqlx::Result<LinkCode> {
    let code = random_code();
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
    use secrecy::SecretString;
    use widgetd_domain::auth::{self, Role};
    use widgetd_domain::startup::{self, DataDir};

    use super::*;

    #[test]
    fn a_code_is_read_whatever_its_case_and_spacing() {
        assert_eq!(code_hash("ABCD-EF23"), code_hash(" abcdef23 "));
        assert_ne!(code_hash("ABCDEF23"), code_hash("ABCDEF24"));
    }

    #[test]
    fn every_letter_is_drawn_equally_often_and_none_reads_as_another() {
        let every_byte: Vec<u8> = (0..=255).collect();
        let letters: Vec<char> = drawn(&every_byte).collect();
        assert_eq!(letters.len(), 248);
        for letter in ALPHABET.iter().map(|b| char::from(*b)) {
            let times = letters.iter().filter(|c| **c == letter).count();
            assert_eq!(times, 8, "{letter}");
        }
        let mut distinct = ALPHABET.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 31);
        for ambiguous in *b"0O1IL" {
            assert!(!ALPHABET.contains(&ambiguous), "{}", char::from(ambiguous));
        }
        for _ in 0..100 {
            let code = random_code();
            assert_eq!(code.len(), CODE_CHARS, "{code}");
            assert!(code.bytes().all(|b| ALPHABET.contains(&b)), "{code}");
        }
    }

    /// A data dir on SQLite with a user per name.
    async fn people(names: &[&str]) -> (tempfile::TempDir, DataDir, Vec<UserId>) {
        let dir = tempfile::tempdir().unwrap();
        let data = startup::open(&dir.path().join("data"), None).await.unwrap();
        let mut ids = Vec::new();
        let mut conn = data.db.write.acquire().await.unwrap();
        for name in names {
            let password = SecretString::from("a long test password".to_owned());
            let user = auth::create_user(&mut conn, name, Role::Member, password)
                .await
                .unwrap();
            ids.push(user.id);
        }
        drop(conn);
        (dir, data, ids)
    }

    async fn redeem(data: &DataDir, code: &LinkCode, slack_user: &str) -> Result<UserId> {
        let mut tx = data.db.begin_write().await.unwrap();
        let redeemed = redeem_code(&mut tx, &code.code, "T1", slack_user).await;
        tx.commit().await.unwrap();
        redeemed
    }

    async fn code_for(data: &DataDir, user: &UserId) -> LinkCode {
        let mut tx = data.db.begin_write().await.unwrap();
        let code = new_link_code(&mut tx, user).await.unwrap();
        tx.commit().await.unwrap();
        code
    }

    #[tokio::test]
    async fn a_code_works_for_ten_minutes_once_and_not_after() {
        let (_dir, data, ids) = people(&["alice"]).await;
        let alice = &ids[0];
        assert_eq!(CODE_TTL_MS, 10 * 60 * 1000);
        let before = clock::now_ms();
        let code = code_for(&data, alice).await;
        let after = clock::now_ms();
        assert!((before + CODE_TTL_MS..=after + CODE_TTL_MS).contains(&code.expires_at));
        let shown = code.code.expose_secret();
        assert!(shown.len() == CODE_CHARS && shown.bytes().all(|b| ALPHABET.contains(&b)));

        // Past its time: refused, and spent.
        sqlx::query("UPDATE slack_link_codes SET expires_at = $1")
            .bind(clock::now_ms() - 1)
            .execute(&data.db.write)
            .await
            .unwrap();
        let late = redeem(&data, &code, "UALICE").await.unwrap_err();
        assert_eq!(late.code(), "unknown_link_code");
        let left: i64 = sqlx::query_scalar("SELECT count(*) FROM slack_link_codes")
            .fetch_one(&data.db.read)
            .await
            .unwrap();
        assert_eq!(left, 0);

        let code = code_for(&data, alice).await;
        assert_eq!(redeem(&data, &code, "UALICE").await.unwrap(), *alice);
        let again = redeem(&data, &code, "UOTHER").await.unwrap_err();
        assert_eq!(again.code(), "unknown_link_code");
    }

    #[tokio::test]
    async fn a_slack_user_linked_to_someone_else_is_refused_but_may_link_again() {
        let (_dir, data, ids) = people(&["alice", "bob"]).await;
        let (alice, bob) = (&ids[0], &ids[1]);
        let code = code_for(&data, alice).await;
        redeem(&data, &code, "UALICE").await.unwrap();
        let code = code_for(&data, bob).await;
        let taken = redeem(&data, &code, "UALICE").await.unwrap_err();
        assert_eq!(taken.code(), "slack_user_linked");
        let mut conn = data.db.read.acquire().await.unwrap();
        assert!(link_of_user(&mut conn, bob).await.unwrap().is_none());
        let link = link_of_slack_user(&mut conn, "T1", "UALICE").await.unwrap();
        assert_eq!(link.map(|l| l.user_id).as_ref(), Some(alice));
        drop(conn);
        // Alice linking the same Slack user again is no conflict.
        let code = code_for(&data, alice).await;
        assert_eq!(redeem(&data, &code, "UALICE").await.unwrap(), *alice);
    }

    #[tokio::test]
    async fn unlinking_removes_the_link_and_says_whether_there_was_one() {
        let (_dir, data, ids) = people(&["alice"]).await;
        let alice = &ids[0];
        let code = code_for(&data, alice).await;
        redeem(&data, &code, "UALICE").await.unwrap();
        let mut tx = data.db.begin_write().await.unwrap();
        assert!(unlink(&mut tx, alice).await.unwrap());
        assert!(link_of_user(&mut tx, alice).await.unwrap().is_none());
        assert!(!unlink(&mut tx, alice).await.unwrap());
        tx.commit().await.unwrap();
    }
}
