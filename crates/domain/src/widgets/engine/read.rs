//! Reading widgets: by id (in a transaction, under its session's lock, or
//! from the rows kept in memory), by transcript page, by session; and the
//! agent's view of a row.

use serde_json::Value;
use sqlx::AnyConnection;

use super::row::{WidgetRow, WidgetView};
use super::store;
use crate::Core;
use crate::clock;
use crate::error::{Error, Result};
use crate::ids::{SessionId, WidgetId};
use crate::widgets::kinds;

impl From<WidgetRow> for WidgetView {
    fn from(w: WidgetRow) -> Self {
        let parse = |text: &str| serde_json::from_str(text).unwrap_or(Value::Null);
        let mut params = parse(&w.params);
        kinds::public_params(&w.kind, &mut params);
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

/// The widget `id`, or 404.
pub async fn get_widget(conn: &mut AnyConnection, id: &WidgetId) -> Result<WidgetRow> {
    store::find(conn, id)
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
    if !crate::db::Dialect::of(tx).sql().shared_by_daemons() {
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
    Ok(store::of_messages(conn, session, from, to).await?)
}

/// Every widget of a session, oldest first.
pub async fn session_widgets(
    conn: &mut AnyConnection,
    session: &SessionId,
) -> Result<Vec<WidgetRow>> {
    Ok(store::of_session(conn, session).await?)
}
