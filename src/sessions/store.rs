//! SQL of sessions and their agent tokens.

use sqlx::SqliteConnection;

use super::Session;
use crate::ids::SessionId;

pub(super) async fn insert_session(conn: &mut SqliteConnection, s: &Session) -> sqlx::Result<()> {
    sqlx::query("INSERT INTO sessions (id, creator_id, title, created_at) VALUES (?, ?, ?, ?)")
        .bind(&s.id)
        .bind(&s.creator_id)
        .bind(&s.title)
        .bind(s.created_at)
        .execute(conn)
        .await?;
    Ok(())
}

pub(super) async fn insert_agent_token(
    conn: &mut SqliteConnection,
    session: &SessionId,
    hash: &[u8],
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query("INSERT INTO agent_tokens (token_hash, session_id, created_at) VALUES (?, ?, ?)")
        .bind(hash)
        .bind(session)
        .bind(now)
        .execute(conn)
        .await?;
    Ok(())
}

pub(super) async fn find_session(
    conn: &mut SqliteConnection,
    id: &SessionId,
) -> sqlx::Result<Option<Session>> {
    sqlx::query_as(
        "SELECT id, creator_id, title, created_at, archived_at FROM sessions WHERE id = ?",
    )
    .bind(id)
    .fetch_optional(conn)
    .await
}

pub(super) async fn find_live_agent_token(
    conn: &mut SqliteConnection,
    hash: &[u8],
) -> sqlx::Result<Option<SessionId>> {
    sqlx::query_scalar(
        "SELECT s.id FROM agent_tokens t JOIN sessions s ON s.id = t.session_id
         JOIN users u ON u.id = s.creator_id
         WHERE t.token_hash = ? AND s.archived_at IS NULL AND u.disabled = 0",
    )
    .bind(hash)
    .fetch_optional(conn)
    .await
}

/// Sets `archived_at` once; later calls keep the first time.
pub(super) async fn mark_archived(
    conn: &mut SqliteConnection,
    id: &SessionId,
    now: i64,
) -> sqlx::Result<bool> {
    let done =
        sqlx::query("UPDATE sessions SET archived_at = coalesce(archived_at, ?) WHERE id = ?")
            .bind(now)
            .bind(id)
            .execute(conn)
            .await?;
    Ok(done.rows_affected() == 1)
}

/// A user's sessions with their pending widget counts, newest first.
pub(super) async fn overview(
    conn: &mut SqliteConnection,
    user: &crate::ids::UserId,
) -> sqlx::Result<Vec<(Session, i64)>> {
    let rows: Vec<(SessionId, crate::ids::UserId, String, i64, Option<i64>, i64)> = sqlx::query_as(
        "SELECT s.id, s.creator_id, s.title, s.created_at, s.archived_at,
                (SELECT count(*) FROM widgets w WHERE w.session_id = s.id AND w.status = 'pending')
         FROM sessions s WHERE s.creator_id = ? ORDER BY s.created_at DESC",
    )
    .bind(user)
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(
            |(id, creator_id, title, created_at, archived_at, pending)| {
                (
                    Session {
                        id,
                        creator_id,
                        title,
                        created_at,
                        archived_at,
                    },
                    pending,
                )
            },
        )
        .collect())
}
