//! Sending the outbox: sign, POST, record, retry with backoff.

use std::time::Duration;

use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::Value;
use sha2::Sha256;

use super::{Format, SecretBytes, signing_key};
use crate::AppState;
use crate::clock;

/// Attempts per notice; after the last one it is marked failed.
pub const MAX_ATTEMPTS: i64 = 8;
/// How long one attempt may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// How often the outbox is looked at when nothing woke the sender.
const POLL: Duration = Duration::from_secs(1);
/// Backoff after attempt N, in units of the retry base (5 s by default):
/// 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, 3 h.
const BACKOFF: [i64; 7] = [1, 6, 24, 120, 360, 720, 2160];

/// Sends due notices until the process ends. Started by `serve` (and by
/// tests that want deliveries).
pub async fn run(state: AppState) {
    let client = match reqwest::Client::builder()
        .timeout(TIMEOUT)
        // A receiver must not bounce notices elsewhere, such as to an
        // address inside the network only the daemon can reach.
        .redirect(reqwest::redirect::Policy::none())
        .build()
    {
        Ok(client) => client,
        Err(err) => {
            tracing::error!(error = %err, "webhooks are off: no HTTP client");
            return;
        }
    };
    loop {
        match send_due(&state, &client).await {
            Ok(0) => tokio::time::sleep(POLL).await,
            Ok(_) => {}
            Err(err) => {
                tracing::error!(error = %err, "sending webhooks failed; retrying later");
                tokio::time::sleep(POLL).await;
            }
        }
    }
}

/// Sends up to 20 due notices; returns how many were tried.
async fn send_due(state: &AppState, client: &reqwest::Client) -> anyhow::Result<usize> {
    let due: Vec<(i64, String, String, String, i64)> = sqlx::query_as(
        "SELECT id, msg_id, endpoint_id, payload, attempts FROM webhook_outbox \
         WHERE delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at <= $1 \
         ORDER BY next_attempt_at LIMIT 20",
    )
    .bind(clock::now_ms())
    .fetch_all(&state.db.read)
    .await?;
    for (id, msg_id, endpoint, payload, attempts) in &due {
        let outcome = attempt(state, client, msg_id, endpoint, payload).await;
        record(state, *id, *attempts + 1, outcome).await?;
    }
    Ok(due.len())
}

/// What one attempt came to: the receiver's status, or why there was none.
type Outcome = Result<u16, String>;

async fn attempt(
    state: &AppState,
    client: &reqwest::Client,
    msg_id: &str,
    endpoint: &str,
    payload: &str,
) -> Outcome {
    let mut conn = state.db.read.acquire().await.map_err(|e| e.to_string())?;
    let (key, url, format) = signing_key(&mut conn, &state.keyring, endpoint)
        .await
        .map_err(|e| format!("the endpoint's secret could not be read: {e}"))?;
    drop(conn);
    let payload: Value = serde_json::from_str(payload).map_err(|e| e.to_string())?;
    let format = match format.as_str() {
        "slack" => Format::Slack,
        "ntfy" => Format::Ntfy,
        _ => Format::Standard,
    };
    let (body, content_type) = render(format, &payload);
    let timestamp = clock::now_ms() / 1000;
    let mut request = client
        .post(&url)
        .header("content-type", content_type)
        .header("webhook-id", msg_id)
        .header("webhook-timestamp", timestamp.to_string())
        .header(
            "webhook-signature",
            sign(&key, msg_id, timestamp, body.as_bytes()),
        );
    if format == Format::Ntfy {
        let data = &payload["data"];
        request = request
            .header("Title", "widgetd")
            .header("Click", data["widget_url"].as_str().unwrap_or_default());
    }
    match request.body(body).send().await {
        Ok(response) => Ok(response.status().as_u16()),
        // reqwest's error text names the URL, which the owner gave; never a value.
        Err(err) => Err(err.without_url().to_string()),
    }
}

/// `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` (Standard Webhooks).
pub fn sign_with(key: &[u8], msg_id: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(msg_id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    let tag = mac.finalize().into_bytes();
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(tag)
    )
}

fn sign(key: &SecretBytes, msg_id: &str, timestamp: i64, body: &[u8]) -> String {
    sign_with(key.expose(), msg_id, timestamp, body)
}

/// The body for a format, and its content type.
fn render(format: Format, payload: &Value) -> (String, &'static str) {
    let data = &payload["data"];
    let text = summary(payload);
    match format {
        Format::Standard => (payload.to_string(), "application/json"),
        Format::Slack => {
            let url = data["widget_url"].as_str().unwrap_or_default();
            let body = serde_json::json!({ "text": format!("{text} <{url}|Open the transcript>") });
            (body.to_string(), "application/json")
        }
        Format::Ntfy => (text, "text/plain; charset=utf-8"),
    }
}

/// One line for people: what waits or ended, where.
fn summary(payload: &Value) -> String {
    let data = &payload["data"];
    let title = data["session_title"].as_str().unwrap_or_default();
    let what = match data["names"].as_array() {
        Some(names) if !names.is_empty() => {
            let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
            format!("asks for {}", names.join(", "))
        }
        _ => format!(
            "asks a question ({})",
            data["kind"].as_str().unwrap_or("widget")
        ),
    };
    match payload["type"].as_str() {
        Some("widget.created") => format!("The agent in \"{title}\" {what}."),
        _ => format!(
            "A request in \"{title}\" is now {}.",
            data["status"].as_str().unwrap_or("resolved")
        ),
    }
}

/// Keeps the attempt's outcome; schedules the next one or gives up.
async fn record(state: &AppState, id: i64, attempts: i64, outcome: Outcome) -> sqlx::Result<()> {
    let now = clock::now_ms();
    let (status, error) = match &outcome {
        Ok(status) => (Some(i64::from(*status)), None),
        Err(error) => (None, Some(error.clone())),
    };
    let delivered = matches!(outcome, Ok(s) if (200..300).contains(&s));
    let base = state.settings.webhook_retry_base_ms;
    let backoff = BACKOFF[usize::try_from(attempts - 1)
        .unwrap_or(0)
        .min(BACKOFF.len() - 1)];
    let given_up = !delivered && attempts >= MAX_ATTEMPTS;
    let mut tx = state.db.begin_write().await?;
    sqlx::query(
        "UPDATE webhook_outbox SET attempts = $1, last_status = $2, last_error = $3, \
         delivered_at = $4, failed_at = $5, next_attempt_at = $6 WHERE id = $7",
    )
    .bind(attempts)
    .bind(status)
    .bind(error)
    .bind(delivered.then_some(now))
    .bind(given_up.then_some(now))
    .bind(now + base * backoff)
    .bind(id)
    .execute(&mut *tx)
    .await?;
    tx.commit().await
}
