//! SQL of sessions and their agent tokens.

use sqlx::AnyConnection;

use super::Elicitation;
use super::{Session, Sharing};
use crate::auth::bump_epoch;
use crate::ids::SessionId;

pub(super) async fn insert_session(conn: &mut AnyConnection, s: &Session) -> sqlx::Result<()> {
    sqlx::query("INSERT INTO sessions (id, creator_id, title, created_at) VALUES ($1, $2, $3, $4)")
        .bind(&s.id)
        .bind(&s.creator_id)
        .bind(&s.title)
        .bind(s.created_at)
        .execute(conn)
        .await?;
    Ok(())
}

pub(super) async fn insert_agent_token(
    conn: &mut AnyConnection,
    session: &SessionId,
    hash: &[u8],
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO agent_tokens (token_hash, session_id, created_at) VALUES ($1, $2, $3)",
    )
    .bind(hash)
    .bind(session)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

pub(super) async fn find_session(
    conn: &mut AnyConnection,
    id: &SessionId,
) -> sqlx::Result<Option<Session>> {
    sqlx::query_as(&format!(
        "SELECT {} FROM sessions WHERE id = $1",
        super::COLUMNS
    ))
    .bind(id)
    .fetch_optional(conn)
    .await
}

pub(super) async fn find_live_agent_token(
    conn: &mut AnyConnection,
    hash: &[u8],
) -> sqlx::Result<Option<SessionId>> {
    sqlx::query_scalar(
        "SELECT s.id FROM agent_tokens t JOIN sessions s ON s.id = t.session_id
         JOIN users u ON u.id = s.creator_id
         WHERE t.token_hash = $1 AND s.archived_at IS NULL AND u.disabled = 0",
    )
    .bind(hash)
    .fetch_optional(conn)
    .await
}

/// Sets `archived_at` once; later calls keep the first time.
pub(super) async fn mark_archived(
    conn: &mut AnyConnection,
    id: &SessionId,
    now: i64,
) -> sqlx::Result<bool> {
    let done =
        sqlx::query("UPDATE sessions SET archived_at = coalesce(archived_at, $1) WHERE id = $2")
            .bind(now)
            .bind(id)
            .execute(&mut *conn)
            .await?;
    bump_epoch(conn).await?;
    Ok(done.rows_affected() == 1)
}

/// The sessions a user may read (own, shared with everyone, or granted),
/// with their pending widget counts, newest first.
pub(super) async fn overview(
    conn: &mut AnyConnection,
    user: &crate::ids::UserId,
) -> sqlx::Result<Vec<(Session, i64)>> {
    #[derive(sqlx::FromRow)]
    struct Row {
        #[sqlx(flatten)]
        session: Session,
        pending: i64,
    }
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT s.id, s.creator_id, s.title, s.created_at, s.archived_at, s.others_can,
                (SELECT count(*) FROM widgets w WHERE w.session_id = s.id AND w.status = 'pending') AS pending
         FROM sessions s
         WHERE s.creator_id = $1 OR s.others_can <> 'none'
            OR EXISTS (SELECT 1 FROM session_grants g WHERE g.session_id = s.id AND g.user_id = $1)
         ORDER BY s.created_at DESC",
    )
    .bind(user)
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|r| (r.session, r.pending)).collect())
}

/// Who may read a session (`$1` the user), and the list's filter.
const LISTED: &str = "(s.creator_id = $1 OR s.others_can <> 'none'
       OR EXISTS (SELECT 1 FROM session_grants g WHERE g.session_id = s.id AND g.user_id = $1))
     AND (lower(s.title) LIKE $2 ESCAPE '\\' OR s.id = $3)";

pub(super) async fn page(
    conn: &mut AnyConnection,
    user: &crate::ids::UserId,
    query: &super::ListQuery<'_>,
) -> sqlx::Result<(Vec<super::Listed>, i64)> {
    #[derive(sqlx::FromRow)]
    struct Row {
        #[sqlx(flatten)]
        session: Session,
        pending: i64,
        said: i64,
        ended: i64,
    }
    let archived = if query.archived {
        "s.archived_at IS NOT NULL"
    } else {
        "s.archived_at IS NULL"
    };
    let pattern = format!(
        "%{}%",
        crate::db::like_escape(&query.search.trim().to_lowercase())
    );
    let search = query.search.trim();
    let total: i64 = sqlx::query_scalar(&format!(
        "SELECT count(*) FROM sessions s WHERE {archived} AND {LISTED}"
    ))
    .bind(user)
    .bind(&pattern)
    .bind(search)
    .fetch_one(&mut *conn)
    .await?;
    // The latest line of the transcript (by id, along the index) and the
    // latest widget to end; the larger is the session's last activity.
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "SELECT * FROM (
           SELECT s.id, s.creator_id, s.title, s.created_at, s.archived_at, s.others_can,
             (SELECT count(*) FROM widgets w WHERE w.session_id = s.id AND w.status = 'pending') AS pending,
             coalesce((SELECT m.created_at FROM messages m WHERE m.session_id = s.id
                       ORDER BY m.id DESC LIMIT 1), s.created_at) AS said,
             coalesce((SELECT max(w.resolved_at) FROM widgets w WHERE w.session_id = s.id), 0) AS ended
           FROM sessions s WHERE {archived} AND {LISTED}
         ) x
         ORDER BY CASE WHEN x.ended > x.said THEN x.ended ELSE x.said END DESC, x.id DESC
         LIMIT $4 OFFSET $5"
    ))
    .bind(user)
    .bind(&pattern)
    .bind(search)
    .bind(query.limit)
    .bind(query.offset)
    .fetch_all(conn)
    .await?;
    let listed = rows
        .into_iter()
        .map(|r| super::Listed {
            activity: r.said.max(r.ended),
            session: r.session,
            pending: r.pending,
        })
        .collect();
    Ok((listed, total))
}

pub(super) async fn grants(
    conn: &mut AnyConnection,
    session: &SessionId,
) -> sqlx::Result<Vec<(String, Sharing)>> {
    sqlx::query_as(
        "SELECT u.name, g.access FROM session_grants g JOIN users u ON u.id = g.user_id
         WHERE g.session_id = $1 ORDER BY u.name",
    )
    .bind(session)
    .fetch_all(conn)
    .await
}

pub(super) async fn grant_of(
    conn: &mut AnyConnection,
    session: &SessionId,
    user: &crate::ids::UserId,
) -> sqlx::Result<Option<Sharing>> {
    sqlx::query_scalar("SELECT access FROM session_grants WHERE session_id = $1 AND user_id = $2")
        .bind(session)
        .bind(user)
        .fetch_optional(conn)
        .await
}

pub(super) async fn set_others_can(
    conn: &mut AnyConnection,
    session: &SessionId,
    to: Sharing,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE sessions SET others_can = $1 WHERE id = $2")
        .bind(to)
        .bind(session)
        .execute(&mut *conn)
        .await?;
    bump_epoch(conn).await
}

pub(super) async fn set_grant(
    conn: &mut AnyConnection,
    session: &SessionId,
    user: &crate::ids::UserId,
    access: Sharing,
) -> sqlx::Result<()> {
    if access == Sharing::None {
        sqlx::query("DELETE FROM session_grants WHERE session_id = $1 AND user_id = $2")
            .bind(session)
            .bind(user)
            .execute(&mut *conn)
            .await?;
    } else {
        sqlx::query(
            "INSERT INTO session_grants (session_id, user_id, access) VALUES ($1, $2, $3)
             ON CONFLICT (session_id, user_id) DO UPDATE SET access = excluded.access",
        )
        .bind(session)
        .bind(user)
        .bind(access)
        .execute(&mut *conn)
        .await?;
    }
    bump_epoch(conn).await
}

/// Deletes every agent token of `session`; returns how many there were.
pub(super) async fn delete_agent_tokens(
    conn: &mut AnyConnection,
    session: &SessionId,
) -> sqlx::Result<u64> {
    let done = sqlx::query("DELETE FROM agent_tokens WHERE session_id = $1")
        .bind(session)
        .execute(&mut *conn)
        .await?;
    bump_epoch(conn).await?;
    Ok(done.rows_affected())
}

pub(super) async fn count_agent_tokens(
    conn: &mut AnyConnection,
    session: &SessionId,
) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT count(*) FROM agent_tokens WHERE session_id = $1")
        .bind(session)
        .fetch_one(conn)
        .await
}

pub(super) async fn all(conn: &mut AnyConnection) -> sqlx::Result<Vec<super::SessionSummary>> {
    sqlx::query_as(
        "SELECT s.id, u.name AS owner, s.title, s.created_at, s.archived_at,
                (SELECT count(*) FROM widgets w WHERE w.session_id = s.id AND w.status = 'pending') AS pending
         FROM sessions s JOIN users u ON u.id = s.creator_id
         ORDER BY s.created_at DESC, s.id",
    )
    .fetch_all(conn)
    .await
}

pub(super) async fn set_elicitation(
    conn: &mut AnyConnection,
    id: &SessionId,
    modes: Elicitation,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE sessions SET elicitation = $1 WHERE id = $2")
        .bind(modes)
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

pub(super) async fn elicitation(
    conn: &mut AnyConnection,
    id: &SessionId,
) -> sqlx::Result<Option<Elicitation>> {
    sqlx::query_scalar("SELECT elicitation FROM sessions WHERE id = $1")
        .bind(id)
        .fetch_optional(conn)
        .await
        .map(Option::flatten)
}
