//! Resume prompts: the one sentence the agent's next turn starts with after
//! a widget resolves. Built only from names, scope and status, never from a
//! value. Delivered at least once: handed out until acknowledged.

pub mod api;

use serde::Serialize;
use sqlx::AnyConnection;

use crate::clock;
use crate::ids::SessionId;
use crate::widgets::{WidgetId, WidgetStatus};

/// The default tag that opens every prompt.
pub const DEFAULT_TAG: &str = "[Agor]";

/// The resume prompt of an `env_vars` widget that reached `status`.
/// `scope` is given for submissions only.
pub fn env_vars_prompt(
    tag: &str,
    status: WidgetStatus,
    names: &[&str],
    scope: Option<&str>,
) -> String {
    let list = names.join(", ");
    let several = names.len() > 1;
    let retry =
        "Do not re-request immediately — ask whether to proceed without, or move on to other work.";
    match status {
        WidgetStatus::Submitted => format!(
            "{tag} User submitted {list} (scope: {}). You can now retry the operation that needed it.",
            scope.unwrap_or("session")
        ),
        WidgetStatus::AlreadyPresent => {
            let verb = if several { "were" } else { "was" };
            format!("{tag} {list} {verb} already configured. You can proceed.")
        }
        WidgetStatus::Dismissed => format!("{tag} User dismissed the request for {list}. {retry}"),
        WidgetStatus::Expired => {
            format!(
                "{tag} The request for {list} expired before the user answered; no value was given. {retry}"
            )
        }
        WidgetStatus::Cancelled => format!(
            "{tag} The request for {list} was cancelled because the session was archived; no value was given."
        ),
        WidgetStatus::Pending => unreachable!("pending widgets have no resume prompt"),
    }
}

/// The resume prompt of a question widget that reached `status`. The
/// answers (not secrets) go back as JSON keyed by question text.
pub fn ask_prompt(tag: &str, status: WidgetStatus, answers: &serde_json::Value) -> String {
    let retry = "Do not ask again immediately — decide how to proceed, or move on to other work.";
    match status {
        WidgetStatus::Submitted | WidgetStatus::AlreadyPresent => {
            format!("{tag} User answered: {answers}")
        }
        WidgetStatus::Dismissed => {
            format!("{tag} User dismissed your question without answering. {retry}")
        }
        WidgetStatus::Expired => {
            format!(
                "{tag} Your question expired before the user answered; no answer was given. {retry}"
            )
        }
        WidgetStatus::Cancelled => {
            format!(
                "{tag} Your question was cancelled because the session was archived; no answer was given."
            )
        }
        WidgetStatus::Pending => unreachable!("pending widgets have no resume prompt"),
    }
}

/// The resume prompt of an approval request for `tool`.
pub fn approval_prompt(
    tag: &str,
    status: WidgetStatus,
    tool: &str,
    result: &serde_json::Value,
) -> String {
    let not_approved = "it was not approved. Do not run it; ask the user how to proceed.";
    let pattern = result["pattern"].as_str();
    match (status, result["decision"].as_str()) {
        (WidgetStatus::AlreadyPresent, _) => match pattern {
            Some(p) => format!(
                "{tag} {tool} is pre-approved for commands like `{p}` (always allowed). You can run it now."
            ),
            None => format!(
                "{tag} {tool} is pre-approved for this exact input (always allowed). You can run it now."
            ),
        },
        (WidgetStatus::Submitted, Some("always")) if pattern.is_some() => format!(
            "{tag} User approved {tool} for commands like `{}`, now and in future requests. You can run it now.",
            pattern.unwrap_or_default()
        ),
        (WidgetStatus::Submitted, Some("once")) => {
            format!("{tag} User approved {tool} once. You can run it now.")
        }
        (WidgetStatus::Submitted, Some("always")) => format!(
            "{tag} User approved {tool} for this exact input, now and in future requests. You can run it now."
        ),
        (WidgetStatus::Submitted, _) => match result["reason"].as_str() {
            Some(reason) => format!(
                "{tag} User denied {tool}. Reason: {}. Do not run it; ask the user how to proceed.",
                reason.trim_end_matches('.')
            ),
            None => {
                format!("{tag} User denied {tool}. Do not run it; ask the user how to proceed.")
            }
        },
        (WidgetStatus::Dismissed, _) => {
            format!("{tag} User dismissed the request to run {tool}; {not_approved}")
        }
        (WidgetStatus::Expired, _) => {
            format!("{tag} The request to run {tool} expired unanswered; {not_approved}")
        }
        (WidgetStatus::Cancelled, _) => {
            format!(
                "{tag} The request to run {tool} was cancelled because the session was archived; {not_approved}"
            )
        }
        (WidgetStatus::Pending, _) => unreachable!("pending widgets have no resume prompt"),
    }
}

/// The resume prompt of a widget of a kind this version does not know,
/// which can only lapse.
pub fn lapse_prompt(tag: &str, status: WidgetStatus) -> String {
    match status {
        WidgetStatus::Cancelled => format!(
            "{tag} A request was cancelled because the session was archived; nothing was given."
        ),
        _ => format!(
            "{tag} A request ended without an answer ({}); nothing was given.",
            status.as_str()
        ),
    }
}

/// A queued prompt as the agent host receives it.
#[derive(Debug, Serialize, sqlx::FromRow)]
pub struct Prompt {
    pub prompt_id: i64,
    pub widget_id: String,
    pub text: String,
    pub created_at: i64,
}

/// Queues the prompt of `widget` in the caller's transaction. The unique key
/// on the widget makes a second queueing impossible.
pub async fn queue(
    conn: &mut AnyConnection,
    session: &SessionId,
    widget: &WidgetId,
    text: &str,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO prompts (session_id, widget_id, text, created_at) VALUES ($1, $2, $3, $4)",
    )
    .bind(session)
    .bind(widget)
    .bind(text)
    .bind(clock::now_ms())
    .execute(conn)
    .await?;
    Ok(())
}

/// Prompts not acknowledged yet, oldest first.
pub async fn undelivered(
    conn: &mut AnyConnection,
    session: &SessionId,
) -> sqlx::Result<Vec<Prompt>> {
    sqlx::query_as(
        "SELECT id AS prompt_id, widget_id, text, created_at FROM prompts
         WHERE session_id = $1 AND acked_at IS NULL ORDER BY id",
    )
    .bind(session)
    .fetch_all(conn)
    .await
}

/// Marks a prompt delivered. Idempotent; false if the session has no such prompt.
pub async fn ack(
    conn: &mut AnyConnection,
    session: &SessionId,
    prompt_id: i64,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE prompts SET acked_at = coalesce(acked_at, $1) WHERE id = $2 AND session_id = $3",
    )
    .bind(clock::now_ms())
    .bind(prompt_id)
    .bind(session)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Marks the prompt of `widget` delivered (it went back to a waiting call).
pub async fn ack_widget(
    conn: &mut AnyConnection,
    session: &SessionId,
    widget: &WidgetId,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE prompts SET acked_at = coalesce(acked_at, $1) WHERE session_id = $2 AND widget_id = $3")
        .bind(clock::now_ms())
        .bind(session)
        .bind(widget)
        .execute(conn)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_match_the_contract_word_for_word() {
        let one = ["HUBSPOT_API_KEY"];
        assert_eq!(
            env_vars_prompt("[Agor]", WidgetStatus::Submitted, &one, Some("global")),
            "[Agor] User submitted HUBSPOT_API_KEY (scope: global). You can now retry the operation that needed it."
        );
        assert_eq!(
            env_vars_prompt("[Agor]", WidgetStatus::AlreadyPresent, &one, None),
            "[Agor] HUBSPOT_API_KEY was already configured. You can proceed."
        );
        assert_eq!(
            env_vars_prompt("[Agor]", WidgetStatus::AlreadyPresent, &["A", "B"], None),
            "[Agor] A, B were already configured. You can proceed."
        );
        assert_eq!(
            env_vars_prompt("[Agor]", WidgetStatus::Dismissed, &one, None),
            "[Agor] User dismissed the request for HUBSPOT_API_KEY. Do not re-request immediately — ask whether to proceed without, or move on to other work."
        );
        assert!(
            env_vars_prompt("[X]", WidgetStatus::Expired, &one, None)
                .starts_with("[X] The request for HUBSPOT_API_KEY expired")
        );
        assert!(
            env_vars_prompt("[Agor]", WidgetStatus::Cancelled, &one, None)
                .contains("no value was given")
        );
    }
}
