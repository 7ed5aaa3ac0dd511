//! Sending the outbox: sign, POST, record, retry with backoff.
//!
//! Notices go out concurrently, so one user's slow or dead receivers do
//! not hold up anyone else's: each owner has at most [`PER_OWNER`] in
//! flight (and the due notices are read at most that many per owner, so
//! another owner's are always among them), all owners together at most
//! [`IN_FLIGHT`]; an attempt gives up after [`TIMEOUT`]; and an endpoint
//! that failed [`breaker::TRIP_AFTER`] times in a row is skipped for a
//! cool-down (`breaker.rs`).

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::Value;
use sha2::Sha256;
use tokio::sync::{Notify, Semaphore};

use super::breaker::Breakers;
use super::{Format, SecretBytes, address, signing_key};
use widgetd_domain::Core;
use widgetd_domain::clock;

/// Attempts per notice; after the last one it is marked failed.
pub const MAX_ATTEMPTS: i64 = 8;
/// How long one attempt may take, and of it, the connection.
const TIMEOUT: Duration = Duration::from_secs(5);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How often the outbox is looked at when nothing woke the sender.
const POLL: Duration = Duration::from_secs(1);
/// Notices in flight at once, per owner and in all.
pub const PER_OWNER: usize = 4;
pub const IN_FLIGHT: usize = 32;
/// Backoff after attempt N, in units of the retry base (5 s by default):
/// 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, 3 h.
const BACKOFF: [i64; 7] = [1, 6, 24, 120, 360, 720, 2160];

/// The sender's shared state: what is in flight, per owner, and the
/// endpoints' circuit breakers.
struct Sender {
    state: Arc<Core>,
    settings: super::WebhookSettings,
    client: reqwest::Client,
    slots: Arc<Semaphore>,
    in_flight: Mutex<HashSet<i64>>,
    per_owner: Mutex<HashMap<String, usize>>,
    breakers: Mutex<Breakers>,
    /// Woken when an attempt ends, so its owner's next notice goes soon.
    done: Notify,
}

/// A due notice.
#[derive(sqlx::FromRow)]
struct Due {
    id: i64,
    msg_id: String,
    endpoint_id: String,
    payload: String,
    attempts: i64,
    owner_id: String,
}

/// Sends due notices until the process ends. Started by `serve` (and by
/// tests that want deliveries).
pub async fn run(state: Arc<Core>, settings: super::WebhookSettings) {
    let allow_private = settings.allow_private;
    let client = match reqwest::Client::builder()
        .timeout(TIMEOUT)
        .connect_timeout(CONNECT_TIMEOUT)
        // A receiver must not bounce notices elsewhere, such as to an
        // address inside the network only the daemon can reach.
        .redirect(reqwest::redirect::Policy::none())
        // Names are resolved once, checked, and connected to as checked; a
        // proxy from the environment would resolve them again, unchecked.
        .dns_resolver(address::resolver(allow_private))
        .no_proxy()
        .build()
    {
        Ok(client) => client,
        Err(err) => {
            tracing::error!(error = %err, "webhooks are off: no HTTP client");
            return;
        }
    };
    let sender = Arc::new(Sender {
        state,
        settings,
        client,
        slots: Arc::new(Semaphore::new(IN_FLIGHT)),
        in_flight: Mutex::default(),
        per_owner: Mutex::default(),
        breakers: Mutex::default(),
        done: Notify::new(),
    });
    loop {
        if let Err(err) = dispatch(&sender).await {
            tracing::error!(error = %err, "sending webhooks failed; retrying later");
        }
        tokio::select! {
            () = tokio::time::sleep(POLL) => {}
            () = sender.done.notified() => {}
        }
    }
}

/// Starts an attempt for each due notice that may go now.
async fn dispatch(sender: &Arc<Sender>) -> anyhow::Result<()> {
    let now = clock::now_ms();
    // Notices in flight as the list is read: one whose attempt ends
    // meanwhile may be read as it was before that attempt (its count, its
    // next time), and sending it again now would send it twice. They wait
    // for the next read, which the attempt's end wakes.
    let busy = sender.in_flight.lock().unwrap().clone();
    // At most PER_OWNER due notices per owner: one owner's backlog never
    // crowds another's out of the batch.
    let due: Vec<Due> = sqlx::query_as(
        "SELECT id, msg_id, endpoint_id, payload, attempts, owner_id FROM ( \
           SELECT o.id, o.msg_id, o.endpoint_id, o.payload, o.attempts, e.owner_id, o.next_attempt_at, \
             ROW_NUMBER() OVER (PARTITION BY e.owner_id ORDER BY o.next_attempt_at, o.id) AS rn \
           FROM webhook_outbox o JOIN webhook_endpoints e ON e.id = o.endpoint_id \
           WHERE o.delivered_at IS NULL AND o.failed_at IS NULL AND o.next_attempt_at <= $1 \
         ) d WHERE rn <= $2 ORDER BY next_attempt_at, id LIMIT $3",
    )
    .bind(now)
    .bind(PER_OWNER as i64)
    .bind((IN_FLIGHT * 4) as i64)
    .fetch_all(&sender.state.db.read)
    .await?;
    for notice in due {
        let paused = (sender.breakers.lock().unwrap()).open_until(&notice.endpoint_id, now);
        if let Some(until) = paused {
            postpone(&sender.state, &notice.endpoint_id, until).await?;
            continue;
        }
        if busy.contains(&notice.id) || sender.in_flight.lock().unwrap().contains(&notice.id) {
            continue;
        }
        let mut per_owner = sender.per_owner.lock().unwrap();
        let owner = per_owner.entry(notice.owner_id.clone()).or_default();
        if *owner >= PER_OWNER {
            continue;
        }
        let Ok(slot) = sender.slots.clone().try_acquire_owned() else {
            break;
        };
        *owner += 1;
        drop(per_owner);
        sender.in_flight.lock().unwrap().insert(notice.id);
        let sender = Arc::clone(sender);
        tokio::spawn(async move {
            let outcome = attempt(&sender, &notice).await;
            send_done(&sender, &notice, outcome).await;
            drop(slot);
        });
    }
    Ok(())
}

/// Records an attempt, updates the endpoint's breaker, frees its place.
async fn send_done(sender: &Sender, notice: &Due, outcome: Outcome) {
    let now = clock::now_ms();
    let ok = matches!(outcome, Outcome::Delivered(_));
    let opened = match outcome {
        Outcome::Refused => None,
        _ => sender
            .breakers
            .lock()
            .unwrap()
            .record(&notice.endpoint_id, ok, now),
    };
    if let Err(err) = record(sender, notice, outcome).await {
        tracing::error!(error = %err, "a webhook attempt could not be recorded");
    }
    if let Some(until) = opened
        && let Err(err) = postpone(&sender.state, &notice.endpoint_id, until).await
    {
        tracing::error!(error = %err, "a webhook endpoint could not be paused");
    }
    sender.in_flight.lock().unwrap().remove(&notice.id);
    if let Some(n) = sender.per_owner.lock().unwrap().get_mut(&notice.owner_id) {
        *n = n.saturating_sub(1);
    }
    sender.done.notify_one();
}

/// Moves an endpoint's waiting notices to the end of its cool-down (not
/// an attempt: none is counted).
async fn postpone(state: &Core, endpoint: &str, until: i64) -> sqlx::Result<()> {
    let mut tx = state.db.begin_write().await?;
    sqlx::query(
        "UPDATE webhook_outbox SET next_attempt_at = $1 WHERE endpoint_id = $2 \
         AND delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at < $1",
    )
    .bind(until)
    .bind(endpoint)
    .execute(&mut *tx)
    .await?;
    tx.commit().await
}

/// What one attempt came to. Kept for the operator (the row, the log);
/// the endpoint's owner sees only delivered or not.
enum Outcome {
    /// A 2xx answer.
    Delivered(u16),
    /// Another answer, or none (the reason, in the daemon's own words).
    Failed(Option<u16>, String),
    /// The address is not public: not sent, not retried.
    Refused,
}

async fn attempt(sender: &Sender, notice: &Due) -> Outcome {
    let state = &sender.state;
    let read = async {
        let mut conn = state.db.read.acquire().await.map_err(|e| e.to_string())?;
        signing_key(&mut conn, &state.keyring, &notice.endpoint_id)
            .await
            .map_err(|e| format!("the endpoint's secret could not be read: {e}"))
    };
    let (key, url, format) = match read.await {
        Ok(read) => read,
        Err(why) => return Outcome::Failed(None, why),
    };
    if !sender.settings.allow_private && literal_is_private(&url) {
        return Outcome::Refused;
    }
    let Ok(payload) = serde_json::from_str::<Value>(&notice.payload) else {
        return Outcome::Failed(None, "the stored notice is not JSON".to_owned());
    };
    let format = match format.as_str() {
        "slack" => Format::Slack,
        "ntfy" => Format::Ntfy,
        _ => Format::Standard,
    };
    let (body, content_type) = render(format, &payload);
    let timestamp = clock::now_ms() / 1000;
    let msg_id = notice.msg_id.as_str();
    let mut request = sender
        .client
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
            .header("Click", data["widget_url"].as_str().unwrap_or_default())
            .header(
                "Actions",
                ntfy_actions(&state.settings.public_url, &payload),
            );
    }
    match request.body(body).send().await {
        Ok(response) if response.status().is_success() => {
            Outcome::Delivered(response.status().as_u16())
        }
        Ok(response) => {
            Outcome::Failed(Some(response.status().as_u16()), "not a 2xx answer".into())
        }
        Err(err) if address::is_refusal(&err) => Outcome::Refused,
        Err(err) if err.is_timeout() => Outcome::Failed(None, "timed out".into()),
        Err(err) if err.is_connect() => Outcome::Failed(None, "could not connect".into()),
        Err(_) => Outcome::Failed(None, "the request failed".into()),
    }
}

/// Whether the URL names a literal IP that is not public (a name is
/// checked by the client's resolver instead).
fn literal_is_private(url: &str) -> bool {
    address::host_and_port(url)
        .and_then(|(host, _)| host.parse::<IpAddr>().ok())
        .is_some_and(|ip| !address::is_public(ip))
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

/// ntfy's action buttons (simple format, docs.ntfy.sh "Action buttons"):
/// one `view` action opening the widget's own page, where the person logs
/// in to answer. Never an `http` action: that would answer without a login.
pub fn ntfy_actions(public_url: &str, payload: &Value) -> String {
    let widget = payload["data"]["widget_id"].as_str().unwrap_or_default();
    format!("view, Open in widgetd, {public_url}/widgets/{widget}")
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

/// Keeps the attempt's outcome; schedules the next one or gives up (at
/// once for a refused address).
async fn record(sender: &Sender, notice: &Due, outcome: Outcome) -> sqlx::Result<()> {
    let state = &sender.state;
    let now = clock::now_ms();
    let attempts = notice.attempts + 1;
    let (status, error, delivered, refused) = match outcome {
        Outcome::Delivered(status) => (Some(i64::from(status)), None, true, false),
        Outcome::Failed(status, why) => (status.map(i64::from), Some(why), false, false),
        Outcome::Refused => (
            None,
            Some("the address is not public".to_owned()),
            false,
            true,
        ),
    };
    if refused {
        tracing::warn!(
            endpoint = %notice.endpoint_id,
            "a webhook notice was not sent: its address is not public (see --webhooks-allow-private)"
        );
    }
    let base = sender.settings.retry_base_ms;
    let backoff = BACKOFF[usize::try_from(attempts - 1)
        .unwrap_or(0)
        .min(BACKOFF.len() - 1)];
    let given_up = !delivered && (refused || attempts >= MAX_ATTEMPTS);
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
    .bind(notice.id)
    .execute(&mut *tx)
    .await?;
    tx.commit().await
}
