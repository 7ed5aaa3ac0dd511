//! Questions and approvals in Slack: one workspace connection per
//! deployment (a Slack app's bot token and signing secret, sealed like
//! webhook secrets), a link per person between a widgetd user and a Slack
//! user (made from widgetd's settings with a one-time code, never from
//! Slack alone), and for each widget a Block Kit message to every linked
//! person who may answer it.
//!
//! An answer from Slack is the person's only because Slack signed the
//! request (`verify.rs`) and the Slack user is linked to them; it then goes
//! through the same checks and transition as an answer in the transcript.
//! Env vars are never asked there: their message links to widgetd's page.
//! Messages carry names, questions, options and the approval's input,
//! never a value (`blocks.rs`).

pub mod blocks;
pub mod delivery;
pub mod limits;
mod links;
pub mod verify;

use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;
use sqlx::AnyConnection;

pub use links::{
    Link, LinkCode, link_of_slack_user, link_of_user, new_link_code, redeem_code, unlink,
};

use widgetd_domain::access::{self, Access};
use widgetd_domain::crypto::{Keyring, aad};
use widgetd_domain::db::WriteTx;
use widgetd_domain::error::{Error, Result};
use widgetd_domain::ids::UserId;
use widgetd_domain::notify::{Change, Notifier};
use widgetd_domain::widgets::WidgetStatus;
use widgetd_domain::{Core, clock, sessions};

/// Slack's Web API.
pub const API_BASE: &str = "https://slack.com/api";

/// Where Slack is reached (`serve --slack-api-base`, hidden: tests point it
/// at a fake).
#[derive(Debug, Clone)]
pub struct SlackSettings {
    /// Slack's Web API, [`API_BASE`].
    pub api_base: String,
}

impl Default for SlackSettings {
    fn default() -> Self {
        Self {
            api_base: API_BASE.to_owned(),
        }
    }
}

/// The Slack notifier: a new widget becomes a message to every linked
/// person who may answer it; a change brings those messages up to date.
pub struct Slack;

#[async_trait::async_trait]
impl Notifier for Slack {
    fn targets_sql(&self) -> &'static str {
        "(SELECT count(*) FROM slack_links) * (SELECT count(*) FROM slack_workspace)"
    }

    async fn enqueue(&self, tx: &mut WriteTx, _: &Core, change: &Change<'_>) -> Result<()> {
        match change.status {
            WidgetStatus::Pending => enqueue_new(tx, change.session, change.widget).await,
            _ => Ok(enqueue_update(tx, change.widget).await?),
        }
    }
}

const WORKSPACE_AAD: &str = "widgetd/slack/v1";
const MAX_TOKEN_CHARS: usize = 255;

fn part_aad(part: &str, key_id: i64) -> Vec<u8> {
    aad(WORKSPACE_AAD, &[part.as_bytes(), &key_id.to_be_bytes()])
}

/// The connection's credentials, as given by the operator.
pub struct Credentials {
    pub bot_token: SecretString,
    pub signing_secret: SecretString,
}

impl Credentials {
    /// A bot token (`xoxb-…`) and a signing secret, each without spaces and
    /// at most 255 characters; the error names neither.
    pub fn parse(bot_token: SecretString, signing_secret: SecretString) -> Result<Self> {
        let plain = |s: &str| {
            !s.is_empty()
                && s.chars().count() <= MAX_TOKEN_CHARS
                && !s.chars().any(|c| c.is_whitespace() || c.is_control())
        };
        let token = bot_token.expose_secret().trim();
        if !(token.starts_with("xoxb-") && plain(token)) {
            return Err(Error::invalid(
                "invalid_bot_token",
                "give the app's Bot User OAuth Token (it starts with `xoxb-`)",
            ));
        }
        if !plain(signing_secret.expose_secret().trim()) {
            return Err(Error::invalid(
                "invalid_signing_secret",
                "give the app's Signing Secret (Basic Information → App Credentials)",
            ));
        }
        Ok(Self {
            bot_token: token.to_owned().into(),
            signing_secret: signing_secret.expose_secret().trim().to_owned().into(),
        })
    }
}

/// Connects the deployment to a Slack app, replacing an earlier connection.
pub async fn connect(
    conn: &mut AnyConnection,
    keyring: &Keyring,
    credentials: &Credentials,
) -> Result<()> {
    let key = keyring.for_write(conn).await.map_err(anyhow::Error::from)?;
    let token = key.seal(
        &part_aad("bot_token", key.id),
        credentials.bot_token.expose_secret().as_bytes(),
    );
    let secret = key.seal(
        &part_aad("signing_secret", key.id),
        credentials.signing_secret.expose_secret().as_bytes(),
    );
    sqlx::query("DELETE FROM slack_workspace")
        .execute(&mut *conn)
        .await?;
    // Whether a widget's change is queued for Slack at all is kept under
    // the auth epoch (`auth/cache.rs`, `notify::Wanted`).
    widgetd_domain::auth::bump_epoch(conn).await?;
    sqlx::query(
        "INSERT INTO slack_workspace (id, key_id, token_nonce, bot_token, secret_nonce, signing_secret, connected_at) \
         VALUES (1, $1, $2, $3, $4, $5, $6)",
    )
    .bind(key.id)
    .bind(&token.nonce)
    .bind(&token.ciphertext)
    .bind(&secret.nonce)
    .bind(&secret.ciphertext)
    .bind(clock::now_ms())
    .execute(conn)
    .await?;
    Ok(())
}

/// Ends the connection: the credentials, every link and every message
/// still to be posted or updated go. Returns whether there was one.
pub async fn disconnect(conn: &mut AnyConnection) -> sqlx::Result<bool> {
    let done = sqlx::query("DELETE FROM slack_workspace")
        .execute(&mut *conn)
        .await?;
    for table in ["slack_messages", "slack_links", "slack_link_codes"] {
        sqlx::query(&format!("DELETE FROM {table}"))
            .execute(&mut *conn)
            .await?;
    }
    Ok(done.rows_affected() > 0)
}

/// What `widgetd slack status` and the admin page show: never a credential.
#[derive(Debug, Serialize)]
pub struct Status {
    pub connected: bool,
    pub connected_at: Option<i64>,
    pub linked_people: i64,
    pub messages_not_delivered: i64,
}

/// The connection's state.
pub async fn status(conn: &mut AnyConnection) -> sqlx::Result<Status> {
    let connected_at: Option<i64> =
        sqlx::query_scalar("SELECT connected_at FROM slack_workspace WHERE id = 1")
            .fetch_optional(&mut *conn)
            .await?;
    let linked_people = sqlx::query_scalar("SELECT count(*) FROM slack_links")
        .fetch_one(&mut *conn)
        .await?;
    let messages_not_delivered =
        sqlx::query_scalar("SELECT count(*) FROM slack_messages WHERE failed_at IS NOT NULL")
            .fetch_one(&mut *conn)
            .await?;
    Ok(Status {
        connected: connected_at.is_some(),
        connected_at,
        linked_people,
        messages_not_delivered,
    })
}

/// Which of the connection's secrets to open.
#[derive(Clone, Copy)]
pub enum Part {
    BotToken,
    SigningSecret,
}

#[derive(sqlx::FromRow)]
struct SealedPart {
    key_id: i64,
    nonce: Vec<u8>,
    sealed: Vec<u8>,
}

/// One of the connection's secrets, decrypted; `None` when not connected.
pub async fn open_part(
    conn: &mut AnyConnection,
    keyring: &Keyring,
    part: Part,
) -> Result<Option<SecretString>> {
    let (name, sql) = match part {
        Part::BotToken => (
            "bot_token",
            "SELECT key_id, token_nonce AS nonce, bot_token AS sealed FROM slack_workspace WHERE id = 1",
        ),
        Part::SigningSecret => (
            "signing_secret",
            "SELECT key_id, secret_nonce AS nonce, signing_secret AS sealed FROM slack_workspace WHERE id = 1",
        ),
    };
    let row: Option<SealedPart> = sqlx::query_as(sql).fetch_optional(&mut *conn).await?;
    let Some(SealedPart {
        key_id,
        nonce,
        sealed,
    }) = row
    else {
        return Ok(None);
    };
    let key = keyring
        .get(conn, key_id)
        .await
        .map_err(anyhow::Error::from)?;
    let plain = key.open(&part_aad(name, key_id), &nonce, &sealed)?;
    let text = String::from_utf8(plain.to_vec())
        .map_err(|_| anyhow::anyhow!("the stored Slack {name} is not text"))?;
    Ok(Some(text.into()))
}

/// Authenticates both sealed Slack credentials (for `widgetd check`):
/// how many were checked and why each failed. Nothing decrypted leaves
/// this function.
pub async fn check_secrets(
    conn: &mut AnyConnection,
    keyring: &Keyring,
) -> sqlx::Result<(i64, Vec<String>)> {
    let mut checked = 0;
    let mut bad = Vec::new();
    for (part, name) in [
        (Part::BotToken, "bot token"),
        (Part::SigningSecret, "signing secret"),
    ] {
        match open_part(conn, keyring, part).await {
            Ok(None) => return Ok((0, Vec::new())),
            Ok(Some(_)) => checked += 1,
            Err(Error::Database(e)) => return Err(e),
            Err(e) => {
                checked += 1;
                bad.push(format!("the Slack {name}: {e}"));
            }
        }
    }
    Ok((checked, bad))
}

/// Queues a Slack message of a new pending widget for each linked person
/// who may answer it (the creator, people with `prompt` access; not a
/// disabled user), inside the widget's transaction. Nothing when Slack is
/// not connected. Called only while someone is linked ([`Slack`]'s `targets_sql`).
pub async fn enqueue_new(
    conn: &mut AnyConnection,
    session: &widgetd_domain::ids::SessionId,
    widget: &str,
) -> Result<()> {
    let linked: Vec<UserId> = sqlx::query_scalar(
        "SELECT l.user_id FROM slack_links l JOIN users u ON u.id = l.user_id \
         WHERE u.disabled = 0 AND EXISTS (SELECT 1 FROM slack_workspace)",
    )
    .fetch_all(&mut *conn)
    .await?;
    if linked.is_empty() {
        return Ok(());
    }
    let session = sessions::get_session(conn, session).await?;
    let now = clock::now_ms();
    for user in linked {
        if access::person_access(conn, &session, &user).await? < Access::Prompt {
            continue;
        }
        sqlx::query(
            "INSERT INTO slack_messages (widget_id, user_id, next_attempt_at) VALUES ($1, $2, $3)",
        )
        .bind(widget)
        .bind(&user)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Makes a widget's Slack messages due now, so that they come to show how
/// it ended, inside the transaction that ended it.
pub async fn enqueue_update(conn: &mut AnyConnection, widget: &str) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE slack_messages SET next_attempt_at = $1 WHERE widget_id = $2 AND failed_at IS NULL",
    )
    .bind(clock::now_ms())
    .bind(widget)
    .execute(conn)
    .await?;
    Ok(())
}

/// Whether a message of `widget` was sent to `user`: only such a person
/// may answer it from Slack.
pub async fn was_sent(conn: &mut AnyConnection, widget: &str, user: &UserId) -> sqlx::Result<bool> {
    let sent: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM slack_messages WHERE widget_id = $1 AND user_id = $2",
    )
    .bind(widget)
    .bind(user)
    .fetch_one(conn)
    .await?;
    Ok(sent > 0)
}
