//! The widget store: the SQL of widgets and their transcript messages,
//! and how a creation's writes are batched with others' beyond the
//! writer's own group commit: sent on a guess with a guard in front
//! ([`guess`]), and on PostgreSQL in groups of creations of different
//! sessions (`grouped.rs`).

pub(crate) mod grouped;
pub mod guess;

use serde_json::{Value, json};
use sqlx::AnyConnection;

use crate::db::Script;
use crate::ids::WidgetId;
use crate::ids::{SessionId, UserId};
use crate::sessions::Session;
use crate::widgets::engine::row::{WidgetRow, WidgetStatus};

/// Most widgets one session may have waiting at once.
pub const MAX_PENDING_PER_SESSION: i64 = 50;

pub(super) const COLUMNS: &str = "id, session_id, kind, params, status, result, created_at, expires_at, resolved_at, resolved_by";

/// Adds a widget and its transcript message to `script`, the caller's
/// writes sent as one statement (`db::Script`). On PostgreSQL the message
/// reads the widget's id from the widget's `RETURNING`, so its foreign key
/// sees the widget. The caller holds the session's lock (`create_living`),
/// so the line takes its place in the session's order. A widget the host
/// asked (`by_host`) is marked so (`asked_by`): its agent may not withdraw
/// it; the agent's own take the column's default.
pub(super) fn insert_into(script: &mut Script, w: &WidgetRow, by_host: bool) {
    let widget = match by_host {
        false => format!(
            "INSERT INTO widgets ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
        ),
        true => format!(
            "INSERT INTO widgets ({COLUMNS}, asked_by) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'host')"
        ),
    };
    let returning = script.dialect().sql().reads_returning();
    let (widget, message) = if returning {
        (
            format!("{widget} RETURNING id"),
            "INSERT INTO messages (session_id, kind, role, widget_id, created_at) \
             SELECT $1, 'widget', 'agent', w.id, $2 FROM w",
        )
    } else {
        (
            widget,
            "INSERT INTO messages (session_id, kind, role, widget_id, created_at) \
             SELECT $1, 'widget', 'agent', $3, $2",
        )
    };
    script.push("w", &widget, |v| {
        v.add(w.id.clone())
            .add(w.session_id.clone())
            .add(w.kind.clone())
            .add(w.params.clone())
            .add(w.status)
            .add(w.result.clone())
            .add(w.created_at)
            .add(w.expires_at)
            .add(w.resolved_at)
            .add(w.resolved_by.clone());
    });
    script.push("m", message, |v| {
        v.add(w.session_id.clone()).add(w.created_at);
        if !returning {
            v.add(w.id.clone());
        }
    });
}

/// Whether the host asked widget `id` (`asked_by`), not its agent.
pub(super) async fn asked_by_host(conn: &mut AnyConnection, id: &WidgetId) -> sqlx::Result<bool> {
    let by: Option<String> = sqlx::query_scalar("SELECT asked_by FROM widgets WHERE id = $1")
        .bind(id)
        .fetch_optional(conn)
        .await?;
    Ok(by.as_deref() == Some("host"))
}

/// How many widgets of session `$1` are pending, through
/// `widgets_pending_by_session`.
pub(super) const PENDING_COUNT: &str =
    "SELECT count(*) FROM widgets WHERE session_id = $1 AND status = 'pending'";

/// A session's row, how many of its widgets are pending and what `ahead`
/// (a scalar subquery over the session's row, aliased `s`: what a kind's
/// `born` reads) gives, read together (a creation needs all three); `None`
/// for an unknown session. The count is on `$1`, not the outer row, so
/// PostgreSQL runs it once.
pub(super) async fn session_and_pending(
    conn: &mut AnyConnection,
    id: &SessionId,
    ahead: Option<&str>,
) -> sqlx::Result<Option<(Session, i64, Option<String>)>> {
    #[derive(sqlx::FromRow)]
    struct Row {
        #[sqlx(flatten)]
        session: Session,
        pending: i64,
        ahead: Option<String>,
    }
    let ahead = ahead.unwrap_or("CAST(NULL AS TEXT)");
    let row: Option<Row> = sqlx::query_as(&format!(
        "SELECT {}, ({PENDING_COUNT}) AS pending, {ahead} AS ahead FROM sessions AS s \
         WHERE s.id = $1",
        crate::sessions::COLUMNS
    ))
    .bind(id)
    .fetch_optional(conn)
    .await?;
    Ok(row.map(|r| (r.session, r.pending, r.ahead)))
}

pub(crate) async fn find(
    conn: &mut AnyConnection,
    id: &WidgetId,
) -> sqlx::Result<Option<WidgetRow>> {
    sqlx::query_as(&format!("SELECT {COLUMNS} FROM widgets WHERE id = $1"))
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// What an answer checks before it is applied, read in one statement.
pub(super) struct ForAnswer {
    pub widget: WidgetRow,
    pub session: Session,
    /// The answering person's name (`None` when no person was asked for).
    pub person_name: Option<String>,
}

/// Widget `id` with its session and the name of `person`, who answers it.
pub(super) async fn for_answer(
    conn: &mut AnyConnection,
    id: &WidgetId,
    person: Option<&UserId>,
) -> sqlx::Result<Option<ForAnswer>> {
    // The session's columns renamed, as the widget has an `id` and a
    // `created_at` of its own; the session's id is the widget's `session_id`.
    #[derive(sqlx::FromRow)]
    struct Row {
        #[sqlx(flatten)]
        widget: WidgetRow,
        s_creator_id: UserId,
        s_title: String,
        s_created_at: i64,
        s_archived_at: Option<i64>,
        s_others_can: crate::sessions::Sharing,
        person_name: Option<String>,
    }
    let row: Option<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS}, s_creator_id, s_title, s_created_at, s_archived_at, s_others_can,
                (SELECT name FROM users WHERE users.id = $2) AS person_name
         FROM widgets JOIN (
             SELECT id AS s_id, creator_id AS s_creator_id, title AS s_title,
                    created_at AS s_created_at, archived_at AS s_archived_at,
                    others_can AS s_others_can
             FROM sessions) AS s ON s_id = widgets.session_id
         WHERE widgets.id = $1"
    ))
    .bind(id)
    .bind(person)
    .fetch_optional(conn)
    .await?;
    Ok(row.map(|r| ForAnswer {
        session: Session {
            id: r.widget.session_id.clone(),
            creator_id: r.s_creator_id,
            title: r.s_title,
            created_at: r.s_created_at,
            archived_at: r.s_archived_at,
            others_can: r.s_others_can,
        },
        widget: r.widget,
        person_name: r.person_name,
    }))
}

/// Takes widget `id` out of `pending`: its row as it now stands, or `None`
/// if it was not pending any more.
pub(super) async fn resolve(
    conn: &mut AnyConnection,
    id: &WidgetId,
    to: WidgetStatus,
    result: &Value,
    by: Option<&UserId>,
    now: i64,
) -> sqlx::Result<Option<WidgetRow>> {
    sqlx::query_as(&format!(
        "UPDATE widgets SET status = $1, result = $2, resolved_at = $3, resolved_by = $4
         WHERE id = $5 AND status = 'pending' RETURNING {COLUMNS}"
    ))
    .bind(to)
    .bind(result.to_string())
    .bind(now)
    .bind(by)
    .bind(id)
    .fetch_optional(conn)
    .await
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
    sqlx::query_scalar(PENDING_COUNT)
        .bind(session)
        .fetch_one(conn)
        .await
}

/// The widgets whose transcript lines are `from..=to` (message ids).
pub(crate) async fn of_messages(
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

pub(crate) async fn of_session(
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

/// A new widget's `widget:created` payload, and the env var names it asks
/// for (its audit row's names).
pub(crate) fn created_event(
    widget: &WidgetRow,
    names: Option<Vec<String>>,
) -> (Value, Option<Vec<String>>) {
    let mut created =
        json!({ "widget_id": widget.id, "kind": widget.kind, "status": widget.status });
    if let Some(names) = &names {
        created["names"] = json!(names);
    }
    (created, names)
}

/// A creation's audit detail.
pub(crate) fn created_detail(widget: &WidgetRow) -> String {
    format!("kind={}", widget.kind)
}
