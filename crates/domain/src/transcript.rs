//! The transcript: text messages posted by the agent host, in order with
//! the widgets the agent created, and the replies people write to the
//! agent (`reply`); `api` holds their routes.

pub mod reply;

use serde::{Deserialize, Serialize};
use serde_json::json;
use sqlx::AnyConnection;

use crate::db::WriteTx;
use crate::error::{Error, Result};
use crate::ids::{SessionId, UserId};
use crate::{Core, clock, events};

const MAX_MESSAGE_CHARS: usize = 100_000;

/// Who a transcript line is from.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    #[default]
    Agent,
    User,
    System,
}

crate::db::text_enum!(Role { Agent => "agent", User => "user", System => "system" });

/// One entry of the transcript: text, or a widget.
#[derive(Debug, Serialize, sqlx::FromRow)]
pub struct Message {
    pub id: i64,
    pub kind: String,
    pub role: Role,
    pub body: Option<String>,
    pub widget_id: Option<String>,
    pub created_at: i64,
    /// The user name of the person who wrote a reply; `None` for lines
    /// from the agent or its host.
    pub author: Option<String>,
}

/// The session's transcript, oldest first.
pub async fn list_messages(
    conn: &mut AnyConnection,
    session: &SessionId,
) -> sqlx::Result<Vec<Message>> {
    sqlx::query_as(
        "SELECT m.id, m.kind, m.role, m.body, m.widget_id, m.created_at, u.name AS author
         FROM messages m LEFT JOIN users u ON u.id = m.author_id
         WHERE m.session_id = $1 ORDER BY m.id",
    )
    .bind(session)
    .fetch_all(conn)
    .await
}

/// Up to `limit` lines before message `before` (all when `None`), oldest
/// first: one page of the transcript, read without loading the rest.
pub async fn list_messages_page(
    conn: &mut AnyConnection,
    session: &SessionId,
    before: Option<i64>,
    limit: i64,
) -> sqlx::Result<Vec<Message>> {
    let mut rows: Vec<Message> = sqlx::query_as(
        "SELECT m.id, m.kind, m.role, m.body, m.widget_id, m.created_at, u.name AS author
         FROM messages m LEFT JOIN users u ON u.id = m.author_id
         WHERE m.session_id = $1 AND m.id < $2 ORDER BY m.id DESC LIMIT $3",
    )
    .bind(session)
    .bind(before.unwrap_or(i64::MAX))
    .bind(limit)
    .fetch_all(conn)
    .await?;
    rows.reverse();
    Ok(rows)
}

/// Most lines (text and widgets) in one transcript.
pub const MAX_MESSAGES_PER_SESSION: i64 = 10_000;
/// Most bytes of transcript text in one session.
pub const MAX_TEXT_BYTES_PER_SESSION: i64 = 16 * 1024 * 1024;

/// `409 transcript_full` when a line would take the session past its caps:
/// an agent in a loop must not fill the disk or drown the page.
async fn check_room(tx: &mut AnyConnection, session: &SessionId, adding: usize) -> Result<()> {
    let (lines, bytes): (i64, i64) = sqlx::query_as(
        "SELECT count(*), CAST(coalesce(sum(octet_length(body)), 0) AS BIGINT) \
         FROM messages WHERE session_id = $1",
    )
    .bind(session)
    .fetch_one(&mut *tx)
    .await?;
    let adding = i64::try_from(adding).unwrap_or(i64::MAX);
    if lines >= MAX_MESSAGES_PER_SESSION
        || bytes.saturating_add(adding) > MAX_TEXT_BYTES_PER_SESSION
    {
        return Err(Error::Conflict {
            code: "transcript_full",
            message: format!(
                "this transcript is full ({lines} lines, {bytes} bytes; the most is \
                 {MAX_MESSAGES_PER_SESSION} lines and {MAX_TEXT_BYTES_PER_SESSION} bytes); start a new session"
            ),
        });
    }
    Ok(())
}

/// Checks a line's length: 1 to [`MAX_MESSAGE_CHARS`] characters, not
/// only white space.
fn check_length(text: &str) -> Result<()> {
    let len = text.chars().count();
    if text.trim().is_empty() || len > MAX_MESSAGE_CHARS {
        return Err(Error::invalid(
            "invalid_text",
            format!("`text` needs 1 to {MAX_MESSAGE_CHARS} characters; it has {len}"),
        ));
    }
    Ok(())
}

/// Writes a text line and its `message:created` event in the caller's
/// transaction, if the session is live and has room; returns its id.
/// `author` is the person who wrote it (a reply), with their user name.
async fn insert_text(
    tx: &mut WriteTx,
    session: &SessionId,
    role: Role,
    author: Option<(&UserId, &str)>,
    text: &str,
) -> Result<i64> {
    // Checked and written under the session's lock (PostgreSQL), so no
    // concurrent line slips in between.
    tx.lock(crate::db::Lock::Session(session.as_str())).await?;
    // An archived session is closed: nothing more is added to it.
    crate::widgets::engine::lifecycle::live(
        crate::sessions::get_session(&mut *tx, session).await?,
    )?;
    check_room(&mut *tx, session, text.len()).await?;
    let message_id: i64 = sqlx::query_scalar(
        "INSERT INTO messages (session_id, kind, role, body, author_id, created_at)
         VALUES ($1, 'text', $2, $3, $4, $5) RETURNING id",
    )
    .bind(session)
    .bind(role)
    .bind(text)
    .bind(author.map(|(id, _)| id))
    .bind(clock::now_ms())
    .fetch_one(&mut **tx)
    .await?;
    // The text is kept once, in the message: `events::since` adds it to
    // the event when the event is read.
    let payload =
        json!({ "message_id": message_id, "role": role, "author": author.map(|(_, name)| name) });
    events::record(tx, session, "message:created", &payload).await?;
    Ok(message_id)
}

/// Adds a text line to the transcript and tells the session's watchers.
pub async fn add_message(state: &Core, session: &SessionId, role: Role, text: &str) -> Result<i64> {
    check_length(text)?;
    let first = crate::db::Lock::Session(session.as_str());
    let mut tx = state.db.begin_write_locking(first).await?;
    let message_id = insert_text(&mut tx, session, role, None, text).await?;
    tx.commit().await?;
    state.hub.publish(session);
    Ok(message_id)
}
