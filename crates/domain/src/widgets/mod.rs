//! The widget engine: durable, non-blocking requests for input.
//!
//! A widget is born `pending` (or terminal `already_present`) and leaves
//! `pending` exactly once, in one transaction that also writes everything
//! the transition implies: stored values (submit), the resume prompt, the
//! event and the audit row. The guarded `UPDATE … WHERE status = 'pending'`
//! is the only way out, so concurrent answers cannot both win and a crash
//! leaves either the old state or the whole new one.
//!
//! Two halves: [`engine`], the machinery every kind shares (the traits a
//! kind implements, creation, the lifecycle, the resume prompt's delivery,
//! waiting, the rows and their cache), and [`kinds`], one module per kind
//! (`env_vars`, `ask`, `approval`, `clarification`, `fields`) that
//! declares only what differs. The cards are the server's (`src/cards/`).

pub mod engine;
pub mod kinds;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::AnyConnection;

pub use crate::ids::WidgetId;
pub use engine::cache::RowCache;
pub use engine::create::{MAX_PENDING_PER_SESSION, create, create_living, validate};
pub use engine::delivery::{Answered, Waited};
pub use engine::kind::{AnswerBody, Answerer, Kind, MCP_APP, MCP_CLIENT, Request};
pub use engine::lifecycle::{
    archive_session, dismiss_widget, expire_due, expire_unwaited, live, submit,
};
pub use engine::store::WidgetRow;
pub use engine::wait::{MAX_WAIT_SECS, NEXT_TURN, after_waiting, check_wait, wait_for_answer};
pub use kinds::{Approval, Ask, AskUser, Clarification, EnvVars, Fields, Questions};

use crate::Core;
use crate::audit::{Actor, ClientAddr};
use crate::clock;
use crate::error::{Error, Result};
use crate::ids::SessionId;

/// Where a widget is in its life. Every state but `pending` is terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WidgetStatus {
    Pending,
    Submitted,
    Dismissed,
    Expired,
    Cancelled,
    AlreadyPresent,
}

crate::db::text_enum!(WidgetStatus {
    Pending => "pending",
    Submitted => "submitted",
    Dismissed => "dismissed",
    Expired => "expired",
    Cancelled => "cancelled",
    AlreadyPresent => "already_present",
});

impl WidgetStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Submitted => "submitted",
            Self::Dismissed => "dismissed",
            Self::Expired => "expired",
            Self::Cancelled => "cancelled",
            Self::AlreadyPresent => "already_present",
        }
    }
}

/// What a creating call returns: at once, never waiting for a person.
#[derive(Debug, Serialize)]
pub struct Created {
    pub widget_id: WidgetId,
    pub status: WidgetStatus,
}

/// A widget as anyone who may read the session sees it: parameters and
/// sanitized result, never a value.
#[derive(Debug, Serialize)]
pub struct WidgetView {
    pub widget_id: WidgetId,
    pub session_id: SessionId,
    pub kind: String,
    pub status: WidgetStatus,
    pub params: Value,
    pub result: Option<Value>,
    pub created_at: String,
    pub expires_at: String,
    pub resolved_at: Option<String>,
}

impl From<WidgetRow> for WidgetView {
    fn from(w: WidgetRow) -> Self {
        let parse = |text: &str| serde_json::from_str(text).unwrap_or(Value::Null);
        let mut params = parse(&w.params);
        engine::kind::public_params(&w.kind, &mut params);
        Self {
            params,
            result: w.result.as_deref().map(parse),
            widget_id: w.id,
            session_id: w.session_id,
            kind: w.kind,
            status: w.status,
            created_at: clock::rfc3339(w.created_at),
            expires_at: clock::rfc3339(w.expires_at),
            resolved_at: w.resolved_at.map(clock::rfc3339),
        }
    }
}

/// Who caused a transition, for the audit log.
pub struct Cause<'a> {
    pub actor: &'a Actor,
    pub client: &'a ClientAddr,
}

/// The widget `id`, or 404.
pub async fn get_widget(conn: &mut AnyConnection, id: &WidgetId) -> Result<WidgetRow> {
    engine::store::find(conn, id)
        .await?
        .ok_or(Error::NotFound("widget"))
}

/// The widget `id`, or 404, read in a write transaction under its
/// session's lock (PostgreSQL; [`crate::db::Lock::Session`]): what a
/// transaction reads here no other writer of the session changes before it
/// commits. The first read finds the session; the second, under the lock,
/// is the one to trust.
pub async fn get_widget_locked(tx: &mut crate::db::WriteTx, id: &WidgetId) -> Result<WidgetRow> {
    let first = get_widget(tx, id).await?;
    if crate::db::Dialect::of(tx) == crate::db::Dialect::Sqlite {
        return Ok(first);
    }
    tx.lock(crate::db::Lock::Session(first.session_id.as_str()))
        .await?;
    get_widget(tx, id).await
}

/// The widget `id`, or 404, as [`get_widget`] reads it from the read
/// pool; served from memory when no write can have changed the row since
/// it was read (`cache.rs`). For callers that only show it.
pub async fn read_widget(core: &Core, id: &WidgetId) -> Result<WidgetRow> {
    // Taken before the query: a write after it moves the stamp.
    let stamp = core.stamp().await;
    if let Some(stamp) = stamp
        && let Some(row) = core.widget_rows.get(stamp, id)
    {
        return Ok(row);
    }
    let row = get_widget(&mut *core.db.read.acquire().await?, id).await?;
    if let Some(stamp) = stamp {
        core.widget_rows.put(stamp, &row);
    }
    Ok(row)
}

/// The widgets that stand at transcript lines `from..=to` (message ids):
/// what one page of the transcript shows.
pub async fn widgets_of_messages(
    conn: &mut AnyConnection,
    session: &SessionId,
    from: i64,
    to: i64,
) -> Result<Vec<WidgetRow>> {
    Ok(engine::store::of_messages(conn, session, from, to).await?)
}

/// Every widget of a session, oldest first.
pub async fn session_widgets(
    conn: &mut AnyConnection,
    session: &SessionId,
) -> Result<Vec<WidgetRow>> {
    Ok(engine::store::of_session(conn, session).await?)
}
