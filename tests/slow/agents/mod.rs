//! The agents people run, for real: Claude Code, Codex and Gemini CLI as
//! installed from npm (pinned in `tests/agents`), driven against widgetd
//! with a loopback fake of the model API. The CLIs' MCP clients, hooks and
//! permission logic are the real ones; only the model is scripted.

mod claude;
mod docs;
mod fake_model;
mod fake_responses;
pub(crate) mod harness;
mod others;

use std::time::Duration;

use serde_json::Value;

use crate::helpers::TestApp;

/// Polls until the session has a widget of `kind` in `status`; returns its
/// id. `alive` is called between polls and may fail the test early (the
/// agent exited).
pub async fn widget_of(
    app: &TestApp,
    session: &str,
    kind: &str,
    status: &str,
    mut alive: impl FnMut() -> Result<(), String>,
) -> String {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let id: Option<String> = sqlx::query_scalar(
            "SELECT id FROM widgets WHERE session_id = $1 AND kind = $2 AND status = $3 \
             ORDER BY created_at DESC LIMIT 1",
        )
        .bind(session)
        .bind(kind)
        .bind(status)
        .fetch_optional(&app.state.db.read)
        .await
        .unwrap();
        if let Some(id) = id {
            return id;
        }
        if let Err(why) = alive() {
            panic!("no {status} {kind} widget appeared: {why}");
        }
        if tokio::time::Instant::now() >= deadline {
            panic!(
                "no {status} {kind} widget appeared within 120 s; the session's widgets, \
                 prompts and transcript then:\n{}",
                what_the_session_holds(app, session).await
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A connection's state, wait event type and name, and query.
type Activity = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// The session's widgets (kind, status, result), prompts (text, acked or
/// not) and transcript, for a failure message.
pub(super) async fn what_the_session_holds(app: &TestApp, session: &str) -> String {
    let pool = &app.state.db.read;
    let widgets: Vec<(String, String, Option<String>)> = sqlx::query_as(
        "SELECT kind, CAST(status AS TEXT), result FROM widgets WHERE session_id = $1 ORDER BY created_at",
    )
    .bind(session)
    .fetch_all(pool)
    .await
    .unwrap_or_default();
    let prompts: Vec<(String, Option<i64>)> =
        sqlx::query_as("SELECT text, acked_at FROM prompts WHERE session_id = $1 ORDER BY id")
            .bind(session)
            .fetch_all(pool)
            .await
            .unwrap_or_default();
    let mut out = String::new();
    for (kind, status, result) in widgets {
        out.push_str(&format!(
            "widget {kind} {status} {}\n",
            result.unwrap_or_default()
        ));
    }
    for (text, acked) in prompts {
        out.push_str(&format!("prompt (acked: {}) {text}\n", acked.is_some()));
    }
    out.push_str(&transcript(app, session).await);
    // On PostgreSQL: what each connection of the test's database was doing.
    let activity: Vec<Activity> = sqlx::query_as(
        "SELECT state, wait_event_type, wait_event, left(query, 160) FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    .fetch_all(pool)
    .await
    .unwrap_or_default();
    for row in activity {
        out.push_str(&format!("connection {row:?}\n"));
    }
    out
}

/// The session's transcript lines, `role: text`, one per line.
pub async fn transcript(app: &TestApp, session: &str) -> String {
    let lines: Vec<(String, String)> = sqlx::query_as(
        "SELECT role, body FROM messages WHERE session_id = $1 AND kind = 'text' ORDER BY id",
    )
    .bind(session)
    .fetch_all(&app.state.db.read)
    .await
    .unwrap();
    lines.iter().map(|(r, b)| format!("{r}: {b}\n")).collect()
}

/// The files `widgetd connect CLIENT … --json` printed, as (file, text).
pub fn connect_files(out: &std::process::Output) -> Vec<(String, String)> {
    assert!(
        out.status.success(),
        "widgetd connect failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out: Value = serde_json::from_slice(&out.stdout).unwrap();
    out["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let field = |n: &str| f[n].as_str().unwrap().to_owned();
            (field("file"), field("text"))
        })
        .collect()
}
