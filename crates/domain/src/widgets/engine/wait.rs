//! `wait_seconds`: a creating call may wait a while for the person's answer
//! and return it, for every kind that takes the field.

use serde_json::{Value, json};

use crate::Core;
use crate::error::Result;
use crate::ids::WidgetId;
use crate::widgets::engine::delivery::{Answered, Waited};
use crate::widgets::engine::kind::Request;
use crate::widgets::engine::read::get_widget;
use crate::widgets::engine::row::{Created, WidgetStatus, WidgetView};
use crate::widgets::kinds::env_vars::EnvVars;

/// What a call that learns an `env_vars` outcome is told to do.
pub const NEXT_TURN: &str = "The values are in the environment of your next turn, not of this one: \
     end your turn now; its prompt starts the next.";

/// `{widget_id, status}` at once when `wait` is 0; otherwise waits up to
/// `wait` seconds and adds the `result` (and `answers` for questions), or
/// says plainly that nothing came in time and the answer will be a prompt.
/// The prompt of an answer handed back here stays queued until the caller
/// has the response (see [`super::delivery`]).
pub async fn after_waiting(state: &Core, created: Created, wait: u64) -> Result<Waited> {
    if wait == 0 || created.status != WidgetStatus::Pending {
        let body = json!({ "widget_id": created.widget_id, "status": created.status });
        return Ok(Waited {
            body,
            answered: None,
        });
    }
    let view = wait_for_answer(state, &created.widget_id, wait).await?;
    if view.status == WidgetStatus::Pending {
        let body = json!({
            "widget_id": view.widget_id,
            "status": "pending",
            "message": format!(
                "No answer within {wait} second{}. End your turn: the answer will arrive as a queued prompt.",
                if wait == 1 { "" } else { "s" }
            ),
        });
        return Ok(Waited {
            body,
            answered: None,
        });
    }
    let result = view.result.clone().unwrap_or(Value::Null);
    let mut body = json!({ "widget_id": view.widget_id, "status": view.status, "result": result });
    if let Some(answers) = result.get("answers") {
        body["answers"] = answers.clone();
    }
    if view.kind == EnvVars::NAME && view.status == WidgetStatus::Submitted {
        // Values reach the agent only in the environment of a process
        // started after they were given: its next turn, which its prompt
        // starts. That prompt stays queued, though this call learns the
        // outcome (a person quick enough to answer while an elicitation
        // was still on its way back would otherwise leave no turn to run
        // with the key).
        body["message"] = Value::from(NEXT_TURN);
        return Ok(Waited {
            body,
            answered: None,
        });
    }
    let answered = Answered {
        session: view.session_id.clone(),
        widget: view.widget_id.clone(),
    };
    Ok(Waited {
        body,
        answered: Some(answered),
    })
}

/// Waits up to `seconds` for `widget` to leave `pending`. Its prompt stays
/// queued: the caller acknowledges it once the answer reached its client
/// (see [`super::delivery`]).
pub async fn wait_for_answer(state: &Core, widget: &WidgetId, seconds: u64) -> Result<WidgetView> {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(seconds);
    // The widget's session first, to listen to it before the read that
    // decides whether to wait.
    let session = get_widget(&mut *state.db.read.acquire().await?, widget)
        .await?
        .session_id;
    let mut listener = state.hub.subscribe(&session);
    loop {
        let row = get_widget(&mut *state.db.read.acquire().await?, widget).await?;
        if row.status != WidgetStatus::Pending {
            return Ok(row.into());
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(row.into());
        }
        match tokio::time::timeout_at(deadline, listener.changed()).await {
            Ok(true) | Err(_) => continue,
            Ok(false) => return Ok(row.into()),
        }
    }
}
