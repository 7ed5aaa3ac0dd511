//! Notifications when a widget waits or ends: per-user webhook endpoints,
//! signed the Standard Webhooks way, fed from a durable outbox.
//!
//! A widget change writes one outbox row per endpoint of the session's
//! creator in its own transaction ([`enqueue`]); a background task
//! ([`delivery::run`]) sends them, retries with backoff, and keeps the
//! outcome on the row, which is also the delivery log. Payloads carry
//! names, kinds, the session and URLs, never a value or an answer. Notices
//! go only to public addresses unless the operator allows private ones
//! (`address.rs`), and the log tells the owner only whether a notice was
//! delivered: never a receiver's status or error, which would make the
//! daemon a scanner of its own network.

pub mod address;
mod breaker;
pub mod delivery;

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::AnyConnection;

use widgetd_domain::crypto::{Keyring, aad, random_bytes};
use widgetd_domain::db::WriteTx;
use widgetd_domain::error::{Error, Result};
use widgetd_domain::ids::{SessionId, UserId};
use widgetd_domain::notify::{Change, Notifier};
use widgetd_domain::{Core, Settings, clock};

/// How webhooks are sent (`serve --webhooks-allow-private`).
#[derive(Debug, Clone)]
pub struct WebhookSettings {
    /// Whether notices may go to loopback, private and link-local
    /// addresses.
    pub allow_private: bool,
    /// The first retry waits this long; later ones longer.
    pub retry_base_ms: i64,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self {
            allow_private: false,
            retry_base_ms: 5000,
        }
    }
}

/// The webhooks notifier: a widget's change becomes an outbox row for each
/// endpoint of its session's creator.
pub struct Webhooks;

#[async_trait::async_trait]
impl Notifier for Webhooks {
    fn targets_sql(&self) -> &'static str {
        "(SELECT count(*) FROM webhook_endpoints)"
    }

    async fn enqueue(&self, tx: &mut WriteTx, core: &Core, change: &Change<'_>) -> Result<()> {
        let notice = Notice {
            event: change.event,
            session: change.session,
            widget: change.widget,
            kind: change.kind,
            status: change.status.as_str(),
            names: change.names.clone(),
        };
        Ok(enqueue(tx, &core.settings, &notice).await?)
    }
}

const WEBHOOK_AAD: &str = "widgetd/webhook/v1";
const MAX_URL_CHARS: usize = 2000;
const MAX_ENDPOINTS: i64 = 10;

/// The body a receiver gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// `{"type", "timestamp", "data"}` (Standard Webhooks' suggested shape).
    Standard,
    /// `{"text"}`, as Slack's incoming webhooks take it.
    Slack,
    /// Plain text with `Title` and `Click` headers, as ntfy takes it.
    Ntfy,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Standard => "standard",
            Self::Slack => "slack",
            Self::Ntfy => "ntfy",
        }
    }

    fn parse(text: &str) -> Result<Self> {
        match text {
            "" | "standard" => Ok(Self::Standard),
            "slack" => Ok(Self::Slack),
            "ntfy" => Ok(Self::Ntfy),
            _ => Err(Error::invalid(
                "invalid_format",
                "`format` is `standard`, `slack` or `ntfy`",
            )),
        }
    }
}

/// An endpoint as listed: never its secret.
#[derive(Debug, Serialize, sqlx::FromRow)]
pub struct Endpoint {
    pub id: String,
    pub url: String,
    pub format: String,
    pub created_at: i64,
}

/// A new endpoint and its signing secret, shown this once.
pub struct NewEndpoint {
    pub endpoint: Endpoint,
    pub secret: SecretString,
}

fn endpoint_aad(id: &str, owner: &UserId, key_id: i64) -> Vec<u8> {
    aad(
        WEBHOOK_AAD,
        &[
            id.as_bytes(),
            owner.as_str().as_bytes(),
            &key_id.to_be_bytes(),
        ],
    )
}

/// Checks a receiver URL: http or https, at most 2000 characters, no
/// user info (a password in a URL would be shown on the settings page).
fn check_url(url: &str) -> Result<String> {
    let url = url.trim();
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    let host = rest.and_then(|r| r.split(['/', '?', '#']).next());
    let ok = url.chars().count() <= MAX_URL_CHARS
        && host.is_some_and(|h| !h.is_empty() && !h.contains('@'))
        && !url.chars().any(|c| c.is_whitespace() || c.is_control());
    if !ok {
        return Err(Error::invalid(
            "invalid_url",
            "give an http:// or https:// URL of at most 2000 characters, without a user or password",
        ));
    }
    Ok(url.to_owned())
}

/// Adds an endpoint for `owner`; the secret (`whsec_…`) is returned once.
pub async fn create_endpoint(
    tx: &mut WriteTx,
    keyring: &Keyring,
    owner: &UserId,
    url: &str,
    format: &str,
) -> Result<NewEndpoint> {
    let url = check_url(url)?;
    let format = Format::parse(format)?;
    let count: i64 =
        sqlx::query_scalar("SELECT count(*) FROM webhook_endpoints WHERE owner_id = $1")
            .bind(owner)
            .fetch_one(&mut **tx)
            .await?;
    if count >= MAX_ENDPOINTS {
        return Err(Error::Conflict {
            code: "too_many_webhooks",
            message: format!("a user has at most {MAX_ENDPOINTS} webhooks; delete one first"),
        });
    }
    let key = keyring.for_write(tx).await.map_err(anyhow::Error::from)?;
    let id = uuid::Uuid::new_v4().to_string();
    let raw = random_bytes::<32>();
    let sealed = key.seal(&endpoint_aad(&id, owner, key.id), raw.as_ref());
    let created_at = clock::now_ms();
    sqlx::query(
        "INSERT INTO webhook_endpoints (id, owner_id, url, format, key_id, nonce, secret, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&id)
    .bind(owner)
    .bind(&url)
    .bind(format.as_str())
    .bind(key.id)
    .bind(&sealed.nonce)
    .bind(&sealed.ciphertext)
    .bind(created_at)
    .execute(&mut **tx)
    .await?;
    // Whether a widget's change is queued for webhooks at all is kept
    // under the auth epoch (`auth/cache.rs`, `notify::Wanted`).
    widgetd_domain::auth::bump_epoch(tx).await?;
    use base64::Engine;
    let secret = format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(raw.as_ref())
    );
    Ok(NewEndpoint {
        endpoint: Endpoint {
            id,
            url,
            format: format.as_str().to_owned(),
            created_at,
        },
        secret: secret.into(),
    })
}

/// The owner's endpoints, oldest first.
pub async fn list_endpoints(
    conn: &mut AnyConnection,
    owner: &UserId,
) -> sqlx::Result<Vec<Endpoint>> {
    sqlx::query_as(
        "SELECT id, url, format, created_at FROM webhook_endpoints WHERE owner_id = $1 ORDER BY created_at",
    )
    .bind(owner)
    .fetch_all(conn)
    .await
}

/// Deletes one of the owner's endpoints (and its undelivered notices);
/// returns whether there was one.
pub async fn delete_endpoint(tx: &mut WriteTx, owner: &UserId, id: &str) -> sqlx::Result<bool> {
    let done = sqlx::query("DELETE FROM webhook_endpoints WHERE id = $1 AND owner_id = $2")
        .bind(id)
        .bind(owner)
        .execute(&mut **tx)
        .await?;
    Ok(done.rows_affected() > 0)
}

/// What a notice tells: a widget of `session` was created or resolved.
pub struct Notice<'a> {
    pub event: &'static str,
    pub session: &'a SessionId,
    pub widget: &'a str,
    pub kind: &'a str,
    pub status: &'a str,
    /// Env var names, for `env_vars` widgets.
    pub names: Option<Vec<String>>,
}

/// Queues `notice` for every endpoint of the session's creator, inside the
/// caller's transaction. Called only while some endpoint exists
/// ([`Webhooks`]' `targets_sql`), so a deployment without webhooks looks
/// for none.
pub async fn enqueue(
    conn: &mut AnyConnection,
    settings: &Settings,
    notice: &Notice<'_>,
) -> sqlx::Result<()> {
    let targets: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT e.id, e.format, s.title FROM webhook_endpoints e \
         JOIN sessions s ON s.creator_id = e.owner_id WHERE s.id = $1",
    )
    .bind(notice.session)
    .fetch_all(&mut *conn)
    .await?;
    let now = clock::now_ms();
    for (endpoint, _format, title) in targets {
        let payload = payload(settings, notice, &title, now);
        sqlx::query(
            "INSERT INTO webhook_outbox (msg_id, endpoint_id, event, payload, created_at, next_attempt_at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        // In time order, as ids are (`widgetd_domain::ids`): one page of the
        // `msg_id` index takes a batch's notices.
        .bind(format!("msg_{}", widgetd_domain::ids::time_ordered().simple()))
        .bind(&endpoint)
        .bind(notice.event)
        .bind(payload.to_string())
        .bind(now)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// The notice in the Standard Webhooks shape; the other formats are made
/// from it at delivery.
fn payload(settings: &Settings, notice: &Notice<'_>, title: &str, now: i64) -> Value {
    let session_url = format!("{}/sessions/{}", settings.public_url, notice.session);
    json!({
        "type": notice.event,
        "timestamp": clock::rfc3339(now),
        "data": {
            "session_id": notice.session,
            "session_title": title,
            "session_url": session_url,
            "widget_id": notice.widget,
            "widget_url": format!("{session_url}#w-{}", notice.widget),
            "kind": notice.kind,
            "status": notice.status,
            "names": notice.names,
        }
    })
}

/// One row of the delivery log, as its owner sees it: whether the notice
/// was delivered, never what the receiver answered.
#[derive(Debug, Serialize, sqlx::FromRow)]
pub struct Delivery {
    pub msg_id: String,
    pub endpoint_id: String,
    pub url: String,
    pub event: String,
    pub created_at: i64,
    pub attempts: i64,
    pub delivered_at: Option<i64>,
    pub failed_at: Option<i64>,
    pub next_attempt_at: i64,
}

impl Delivery {
    /// `delivered`, `not_delivered` (given up), or `pending` (not tried
    /// yet, or to be tried again).
    pub fn state(&self) -> &'static str {
        match (self.delivered_at, self.failed_at) {
            (Some(_), _) => "delivered",
            (None, Some(_)) => "not_delivered",
            (None, None) => "pending",
        }
    }
}

/// The owner's most recent notices, newest first.
pub async fn deliveries(
    conn: &mut AnyConnection,
    owner: &UserId,
    limit: i64,
) -> sqlx::Result<Vec<Delivery>> {
    sqlx::query_as(
        "SELECT o.msg_id, o.endpoint_id, e.url, o.event, o.created_at, o.attempts, o.delivered_at, \
         o.failed_at, o.next_attempt_at \
         FROM webhook_outbox o JOIN webhook_endpoints e ON e.id = o.endpoint_id \
         WHERE e.owner_id = $1 ORDER BY o.id DESC LIMIT $2",
    )
    .bind(owner)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// The HMAC key of an endpoint, decrypted for signing.
async fn signing_key(
    conn: &mut AnyConnection,
    keyring: &Keyring,
    endpoint: &str,
) -> Result<(SecretBytes, String, String)> {
    let row: (UserId, String, String, i64, Vec<u8>, Vec<u8>) = sqlx::query_as(
        "SELECT owner_id, url, format, key_id, nonce, secret FROM webhook_endpoints WHERE id = $1",
    )
    .bind(endpoint)
    .fetch_one(&mut *conn)
    .await?;
    let (owner, url, format, key_id, nonce, secret) = row;
    let key = keyring
        .get(conn, key_id)
        .await
        .map_err(anyhow::Error::from)?;
    let plain = key.open(&endpoint_aad(endpoint, &owner, key_id), &nonce, &secret)?;
    Ok((SecretBytes(plain), url, format))
}

/// A webhook signing secret that failed authentication (for `widgetd check`).
#[derive(Debug, Serialize)]
pub struct BadSecret {
    pub endpoint_id: String,
    pub owner_id: UserId,
    pub reason: String,
}

/// An endpoint's id, owner, data key, nonce and sealed secret.
type SealedSecret = (String, UserId, i64, Vec<u8>, Vec<u8>);

/// Authenticates every endpoint's signing secret; returns how many were
/// checked and which failed. Nothing decrypted leaves this function.
pub async fn check_secrets(
    conn: &mut AnyConnection,
    keyring: &Keyring,
) -> sqlx::Result<(i64, Vec<BadSecret>)> {
    let rows: Vec<SealedSecret> = sqlx::query_as(
        "SELECT id, owner_id, key_id, nonce, secret FROM webhook_endpoints ORDER BY id",
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut bad = Vec::new();
    let checked = i64::try_from(rows.len()).expect("row count fits i64");
    for (id, owner, key_id, nonce, secret) in rows {
        let opened = match keyring.get(conn, key_id).await {
            Ok(key) => key
                .open(&endpoint_aad(&id, &owner, key_id), &nonce, &secret)
                .map(drop)
                .map_err(|e| e.to_string()),
            Err(widgetd_domain::crypto::KeyringError::Database(e)) => return Err(e),
            Err(e) => Err(e.to_string()),
        };
        if let Err(reason) = opened {
            bad.push(BadSecret {
                endpoint_id: id,
                owner_id: owner,
                reason,
            });
        }
    }
    Ok((checked, bad))
}

/// A decrypted signing key; zeroed when dropped, never printed.
struct SecretBytes(zeroize::Zeroizing<Vec<u8>>);

impl SecretBytes {
    fn expose(&self) -> &[u8] {
        &self.0
    }
}

/// `whsec_…` as shown once, for tests and receivers: the raw key bytes.
pub fn decode_secret(secret: &SecretString) -> Option<Vec<u8>> {
    use base64::Engine;
    let b64 = secret.expose_secret().strip_prefix("whsec_")?;
    base64::engine::general_purpose::STANDARD.decode(b64).ok()
}
