//! Resume prompts: the message the agent's next turn starts with after a
//! widget resolves. Each kind writes its own texts (`Kind::prompt`), never
//! from a value; here they are queued, handed out and acknowledged.
//! Delivered at least once: handed out until acknowledged.

use serde::Serialize;
use sqlx::AnyConnection;

use crate::clock;
use crate::db::Script;
use crate::ids::SessionId;
use crate::ids::WidgetId;

/// The default tag that opens every prompt.
pub const DEFAULT_TAG: &str = "[Agor]";

/// The resume prompt of a person's reply under the transcript: who wrote
/// it and the text as they wrote it (already checked by
/// `transcript::reply::ReplyText`).
pub fn reply_prompt(tag: &str, author: &str, text: &str) -> String {
    format!("{tag} User {author} wrote: {text}")
}

/// A queued prompt as the agent host receives it: from a widget or from a
/// person's reply (a transcript message).
#[derive(Debug, Serialize, sqlx::FromRow)]
pub struct Prompt {
    pub prompt_id: i64,
    pub widget_id: Option<String>,
    pub message_id: Option<i64>,
    pub text: String,
    pub created_at: i64,
}

/// Queues the prompt of `widget` as one of the caller's writes
/// (`db::Script`). The unique key on the widget makes a second queueing
/// impossible. Watchers hear of it by the event the caller writes with it.
pub fn queue_into(script: &mut Script, session: &SessionId, widget: &WidgetId, text: String) {
    script.push(
        "prompt",
        "INSERT INTO prompts (session_id, widget_id, text, created_at) VALUES ($1, $2, $3, $4)",
        |v| {
            v.add(session.clone())
                .add(widget.clone())
                .add(text)
                .add(clock::now_ms());
        },
    );
}

/// Queues the prompt of a person's reply (transcript message `message`) in
/// the caller's transaction; the unique key on the message makes a second
/// one impossible.
pub async fn queue_reply(
    conn: &mut AnyConnection,
    session: &SessionId,
    message: i64,
    text: &str,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "INSERT INTO prompts (session_id, message_id, text, created_at) VALUES ($1, $2, $3, $4)
         RETURNING id",
    )
    .bind(session)
    .bind(message)
    .bind(text)
    .bind(clock::now_ms())
    .fetch_one(conn)
    .await
}

/// Prompts not acknowledged yet, oldest first.
pub async fn undelivered(
    conn: &mut AnyConnection,
    session: &SessionId,
) -> sqlx::Result<Vec<Prompt>> {
    sqlx::query_as(
        "SELECT id AS prompt_id, widget_id, message_id, text, created_at FROM prompts
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
