//! Posting and updating widgets' Slack messages, in the background: an
//! answer never waits on Slack. Each message row is brought to show its
//! widget's status: posted (`chat.postMessage` to the linked Slack user,
//! which opens the app's direct message) while the widget waits, updated
//! (`chat.update`) once it ended, whichever channel answered. A call gives
//! up after [`TIMEOUT`]; a failed one is retried with backoff, at most
//! [`MAX_ATTEMPTS`] times. A message Slack refuses as invalid
//! ([`REFUSED_PAYLOAD`]) would be refused again: it is not delivered at
//! once, never retried, and counted by `widgetd slack status`.

use std::sync::Arc;
use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};

use super::blocks;
use widgetd_domain::widgets::{self, WidgetId, WidgetStatus};
use widgetd_domain::{Core, clock};

pub const MAX_ATTEMPTS: i64 = 8;
const TIMEOUT: Duration = Duration::from_secs(5);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
const POLL: Duration = Duration::from_millis(500);
/// Messages handled per round, each call bounded by [`TIMEOUT`].
const BATCH: i64 = 16;
/// Backoff after attempt N, in seconds.
const BACKOFF: [i64; 7] = [5, 30, 120, 600, 1800, 3600, 10800];
/// The errors `chat.postMessage` and `chat.update` answer for a payload
/// itself (Slack's method references: its blocks, its text, its arguments),
/// which the same payload would get again.
pub const REFUSED_PAYLOAD: [&str; 7] = [
    "invalid_blocks",
    "invalid_blocks_format",
    "msg_too_long",
    "msg_blocks_too_long",
    "no_text",
    "invalid_arguments",
    "markdown_text_conflict",
];

/// A message that does not show its widget's status yet.
#[derive(sqlx::FromRow)]
struct Due {
    id: i64,
    widget_id: String,
    channel: Option<String>,
    ts: Option<String>,
    attempts: i64,
    slack_user_id: String,
    title: String,
}

/// Slack's Web API as the sender reaches it.
struct Api {
    client: reqwest::Client,
    /// `https://slack.com/api`, without a trailing `/`.
    base: String,
}

/// Posts and updates messages until the process ends. Started by `serve`
/// (and by tests that use Slack).
pub async fn run(state: Arc<Core>, settings: super::SlackSettings) {
    let client = match reqwest::Client::builder()
        .timeout(TIMEOUT)
        .connect_timeout(CONNECT_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
    {
        Ok(client) => client,
        Err(err) => {
            tracing::error!(error = %err, "Slack is off: no HTTP client");
            return;
        }
    };
    let api = Api {
        client,
        base: settings.api_base.trim_end_matches('/').to_owned(),
    };
    loop {
        // One daemon of a deployment at a time, so a message is posted once.
        let ran = state.db.exclusively("slack", round(&state, &api)).await;
        if let Err(err) = ran {
            tracing::error!(error = %err, "updating Slack failed; retrying later");
        }
        tokio::time::sleep(POLL).await;
    }
}

async fn round(state: &Core, api: &Api) -> anyhow::Result<()> {
    let due: Vec<Due> = sqlx::query_as(
        "SELECT m.id, m.widget_id, m.channel, m.ts, m.attempts, l.slack_user_id, s.title \
         FROM slack_messages m JOIN widgets w ON w.id = m.widget_id \
         JOIN sessions s ON s.id = w.session_id JOIN slack_links l ON l.user_id = m.user_id \
         WHERE m.failed_at IS NULL AND m.next_attempt_at <= $1 \
         AND (m.shown IS NULL OR m.shown <> w.status) ORDER BY m.id LIMIT $2",
    )
    .bind(clock::now_ms())
    .bind(BATCH)
    .fetch_all(&state.db.read)
    .await?;
    if due.is_empty() {
        return Ok(());
    }
    let token = {
        let mut conn = state.db.read.acquire().await?;
        super::open_part(&mut conn, &state.keyring, super::Part::BotToken).await?
    };
    let Some(token) = token else {
        return Ok(());
    };
    let calls = due.iter().map(|m| bring_up_to_date(state, api, &token, m));
    for (message, outcome) in due.iter().zip(futures_util::future::join_all(calls).await) {
        record(state, message, outcome).await?;
    }
    Ok(())
}

/// What a message came to.
enum Outcome {
    /// Posted or updated: it shows `status` (in `channel` at `ts`).
    Shown {
        status: WidgetStatus,
        posted: Option<(String, String)>,
    },
    /// Not now; the reason, in the daemon's own words.
    Failed(String),
    /// Refused as invalid (`method: code`): never, so not again.
    Refused(String),
}

async fn bring_up_to_date(state: &Core, api: &Api, token: &SecretString, due: &Due) -> Outcome {
    let widget = match read_widget(state, &due.widget_id).await {
        Ok(widget) => widget,
        Err(why) => return Outcome::Failed(why),
    };
    let status = widget.status;
    let message = blocks::message(&widget, &due.title, &state.settings.public_url);
    let (method, body) = match (&due.channel, &due.ts) {
        (Some(channel), Some(ts)) => (
            "chat.update",
            json!({ "channel": channel, "ts": ts, "text": message.text, "blocks": message.blocks }),
        ),
        // Ended before it was posted: nothing to ask any more.
        _ if status != WidgetStatus::Pending => {
            return Outcome::Shown {
                status,
                posted: None,
            };
        }
        _ => (
            "chat.postMessage",
            json!({ "channel": due.slack_user_id, "text": message.text, "blocks": message.blocks }),
        ),
    };
    let sent = api
        .client
        .post(format!("{}/{method}", api.base))
        .bearer_auth(token.expose_secret())
        .json(&body)
        .send()
        .await;
    let answer: Value = match sent {
        Ok(response) => match response.json().await {
            Ok(answer) => answer,
            Err(_) => return Outcome::Failed(format!("{method}: not a JSON answer")),
        },
        Err(err) if err.is_timeout() => return Outcome::Failed(format!("{method}: timed out")),
        Err(_) => return Outcome::Failed(format!("{method}: the request failed")),
    };
    if answer["ok"] != json!(true) {
        // Slack's error codes (`channel_not_found`, `invalid_auth`) name no value.
        let code: String = answer["error"]
            .as_str()
            .unwrap_or("unknown")
            .chars()
            .take(60)
            .collect();
        let why = format!("{method}: {code}");
        return if REFUSED_PAYLOAD.contains(&code.as_str()) {
            Outcome::Refused(why)
        } else {
            Outcome::Failed(why)
        };
    }
    let posted = (method == "chat.postMessage").then(|| {
        let text = |k: &str| answer[k].as_str().unwrap_or_default().to_owned();
        (text("channel"), text("ts"))
    });
    Outcome::Shown { status, posted }
}

async fn read_widget(state: &Core, id: &str) -> Result<widgets::WidgetRow, String> {
    let id = WidgetId::parse(id).ok_or("a stored widget id is unreadable")?;
    let mut conn = state.db.read.acquire().await.map_err(|e| e.to_string())?;
    widgets::get_widget(&mut conn, &id)
        .await
        .map_err(|e| format!("the widget could not be read: {e}"))
}

/// Keeps what a message came to; schedules the next attempt or gives up.
async fn record(state: &Core, due: &Due, outcome: Outcome) -> sqlx::Result<()> {
    let mut tx = state.db.begin_write().await?;
    match outcome {
        Outcome::Shown { status, posted } => {
            let (channel, ts) = posted.map_or((None, None), |(c, t)| (Some(c), Some(t)));
            sqlx::query(
                "UPDATE slack_messages SET shown = $1, attempts = 0, \
                 channel = coalesce($2, channel), ts = coalesce($3, ts) WHERE id = $4",
            )
            .bind(status.as_str())
            .bind(channel)
            .bind(ts)
            .bind(due.id)
            .execute(&mut *tx)
            .await?;
        }
        Outcome::Failed(why) => {
            tracing::warn!(message = due.id, %why, "a Slack message could not be sent");
            let attempts = due.attempts + 1;
            not_shown(&mut tx, due, attempts, attempts >= MAX_ATTEMPTS).await?;
        }
        Outcome::Refused(why) => {
            tracing::error!(
                message = due.id,
                %why,
                "Slack refused a message as invalid: it is not delivered and not sent again"
            );
            not_shown(&mut tx, due, due.attempts + 1, true).await?;
        }
    }
    tx.commit().await
}

/// A message not shown after `attempts`: tried again after its backoff, or
/// given up (`failed_at`), which `widgetd slack status` counts.
async fn not_shown(
    tx: &mut widgetd_domain::db::WriteTx,
    due: &Due,
    attempts: i64,
    given_up: bool,
) -> sqlx::Result<()> {
    let now = clock::now_ms();
    let step = usize::try_from(attempts - 1)
        .unwrap_or(0)
        .min(BACKOFF.len() - 1);
    sqlx::query(
        "UPDATE slack_messages SET attempts = $1, next_attempt_at = $2, failed_at = $3 \
         WHERE id = $4",
    )
    .bind(attempts)
    .bind(now + BACKOFF[step] * 1000)
    .bind(given_up.then_some(now))
    .bind(due.id)
    .execute(&mut **tx)
    .await?;
    Ok(())
}
