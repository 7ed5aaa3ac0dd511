//! SQL of widgets and their transcript messages.

use serde_json::Value;
use sqlx::AnyConnection;

use super::{WidgetId, WidgetStatus};
use crate::db::Dialect;
use crate::ids::{SessionId, UserId};

/// A widget row.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct WidgetRow {
    pub id: WidgetId,
    pub session_id: SessionId,
    pub kind: String,
    pub params: String,
    pub status: WidgetStatus,
    pub result: Option<String>,
    pub created_at: i64,
    pub expires_at: i64,
    pub resolved_at: Option<i64>,
    pub resolved_by: Option<UserId>,
}

const COLUMNS: &str = "id, session_id, kind, params, status, result, created_at, expires_at, resolved_at, resolved_by";

/// Inserts a widget and its transcript message in one round trip: on
/// SQLite one statement list (one hop to its worker thread; `$N` names the
/// same argument in both), on PostgreSQL, which prepares one statement at
/// a time, one statement whose first part inserts the widget. The caller
/// holds the session's lock (`create_living`), so the line takes its place
/// in the session's order.
pub(super) async fn insert(conn: &mut AnyConnection, w: &WidgetRow) -> sqlx::Result<()> {
    const MESSAGE: &str = "INSERT INTO messages (session_id, kind, role, widget_id, created_at) \
                           VALUES ($2, 'widget', 'agent', $1, $7)";
    let widget =
        format!("INSERT INTO widgets ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)");
    let sql = match Dialect::of(conn) {
        Dialect::Sqlite => format!("{widget}; {MESSAGE}"),
        // The message's foreign key needs the widget: a data-modifying
        // CTE runs first and is seen by the outer statement's checks.
        Dialect::Postgres => format!(
            "WITH w AS ({widget} RETURNING id) \
             INSERT INTO messages (session_id, kind, role, widget_id, created_at) \
             SELECT $2, 'widget', 'agent', w.id, $7 FROM w"
        ),
    };
    sqlx::query(&sql)
        .bind(&w.id)
        .bind(&w.session_id)
        .bind(&w.kind)
        .bind(&w.params)
        .bind(w.status)
        .bind(&w.result)
        .bind(w.created_at)
        .bind(w.expires_at)
        .bind(w.resolved_at)
        .bind(&w.resolved_by)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

pub(super) async fn find(
    conn: &mut AnyConnection,
    id: &WidgetId,
) -> sqlx::Result<Option<WidgetRow>> {
    sqlx::query_as(&format!("SELECT {COLUMNS} FROM widgets WHERE id = $1"))
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// The one way out of `pending`: false when the widget was no longer pending.
pub(super) async fn resolve(
    conn: &mut AnyConnection,
    id: &WidgetId,
    to: WidgetStatus,
    result: &Value,
    by: Option<&UserId>,
    now: i64,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE widgets SET status = $1, result = $2, resolved_at = $3, resolved_by = $4
         WHERE id = $5 AND status = 'pending'",
    )
    .bind(to)
    .bind(result.to_string())
    .bind(now)
    .bind(by)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Sets the `result` of a widget that stays pending (an approval's votes
/// so far); `false` if it is no longer pending.
pub(super) async fn set_pending_result(
    conn: &mut AnyConnection,
    id: &WidgetId,
    result: &Value,
) -> sqlx::Result<bool> {
    let done = sqlx::query("UPDATE widgets SET result = $1 WHERE id = $2 AND status = 'pending'")
        .bind(result.to_string())
        .bind(id)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Pending widgets whose time is up, oldest first.
pub(super) async fn due(
    conn: &mut AnyConnection,
    now: i64,
    limit: i64,
) -> sqlx::Result<Vec<WidgetRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM widgets WHERE status = 'pending' AND expires_at <= $1 ORDER BY expires_at LIMIT $2"
    ))
    .bind(now)
    .bind(limit)
    .fetch_all(conn)
    .await
}

pub(super) async fn pending_of_session(
    conn: &mut AnyConnection,
    session: &SessionId,
) -> sqlx::Result<Vec<WidgetRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM widgets WHERE session_id = $1 AND status = 'pending'"
    ))
    .bind(session)
    .fetch_all(conn)
    .await
}

/// How many widgets of `session` are pending.
pub(super) async fn pending_count(
    conn: &mut AnyConnection,
    session: &SessionId,
) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT count(*) FROM widgets WHERE session_id = $1 AND status = 'pending'")
        .bind(session)
        .fetch_one(conn)
        .await
}

/// Display name of a user, for result metadata.
pub(super) async fn user_name(conn: &mut AnyConnection, id: &UserId) -> sqlx::Result<String> {
    sqlx::query_scalar("SELECT name FROM users WHERE id = $1")
        .bind(id)
        .fetch_one(conn)
        .await
}

/// The widgets whose transcript lines are `from..=to` (message ids).
pub(super) async fn of_messages(
    conn: &mut AnyConnection,
    session: &SessionId,
    from: i64,
    to: i64,
) -> sqlx::Result<Vec<WidgetRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM widgets WHERE session_id = $1 AND id IN
           (SELECT widget_id FROM messages
            WHERE session_id = $2 AND id >= $3 AND id <= $4 AND widget_id IS NOT NULL)"
    ))
    .bind(session)
    .bind(session)
    .bind(from)
    .bind(to)
    .fetch_all(conn)
    .await
}

pub(super) async fn of_session(
    conn: &mut AnyConnection,
    session: &SessionId,
) -> sqlx::Result<Vec<WidgetRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM widgets WHERE session_id = $1 ORDER BY created_at"
    ))
    .bind(session)
    .fetch_all(conn)
    .await
}

/// The widgets of `session` in `status`, newest first, at most `limit`.
pub(super) async fn with_status(
    conn: &mut AnyConnection,
    session: &SessionId,
    status: WidgetStatus,
    limit: i64,
) -> sqlx::Result<Vec<WidgetRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM widgets WHERE session_id = $1 AND status = $2
         ORDER BY created_at DESC, id DESC LIMIT $3"
    ))
    .bind(session)
    .bind(status)
    .bind(limit)
    .fetch_all(conn)
    .await
}
