//! Handing an answer to a waiting caller without losing it.
//!
//! A caller that used `wait_seconds` and got the answer in its response has
//! no need for the queued resume prompt, so that prompt is acknowledged —
//! but only once the response carrying the answer has been handed to the
//! connection in full. If the caller went away first (a dropped connection,
//! an MCP `notifications/cancelled`, a client-side timeout), the prompt stays
//! queued and the agent host delivers it: at least once, never zero times.
//! The response side (`Waited::into_response`, `ack_when_sent`,
//! `on_body_end`) is in `api/respond.rs`.

use serde_json::Value;

use crate::Core;
use crate::ids::{SessionId, WidgetId};
use crate::prompts;

/// The widget whose prompt a response carries the answer of.
#[derive(Debug, Clone)]
pub struct Answered {
    pub session: SessionId,
    pub widget: WidgetId,
}

/// What a caller that may have waited gets back.
#[derive(Debug)]
pub struct Waited {
    /// The tool result / response body.
    pub body: Value,
    /// Set when `body` carries the outcome of the widget.
    pub answered: Option<Answered>,
}

/// Marks the widget's prompt delivered. A failure only means the host
/// delivers it once more, so it is logged and not retried.
pub async fn acknowledge(state: &Core, answered: &Answered) {
    let result = async {
        let mut tx = state.db.begin_write().await?;
        prompts::ack_widget(&mut tx, &answered.session, &answered.widget).await?;
        tx.commit().await
    }
    .await;
    if let Err(err) = result {
        tracing::warn!(error = %err, "a prompt handed to a waiting caller stays queued");
    }
}
