//! Durable events for live views. Every state change writes an event row in
//! its own transaction; after the commit the [`Hub`] wakes the streams and
//! long-polls of that session, which read what is new from the database.
//! The database is the source of truth, so a reconnecting client resumes
//! exactly with `Last-Event-ID`.

pub mod api;

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use sqlx::AnyConnection;
use tokio::sync::{broadcast, watch};

use crate::clock;
use crate::db::Dialect;
use crate::ids::SessionId;

/// A stored event.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Event {
    pub id: i64,
    pub session_id: SessionId,
    pub kind: String,
    pub payload: String,
    pub created_at: i64,
}

/// Writes an event inside the caller's transaction; publish its session to
/// the hub after the commit.
pub async fn record(
    conn: &mut AnyConnection,
    session: &SessionId,
    kind: &'static str,
    payload: &Value,
) -> sqlx::Result<i64> {
    let id = sqlx::query_scalar(
        "INSERT INTO events (session_id, kind, payload, created_at) VALUES ($1, $2, $3, $4) RETURNING id",
    )
    .bind(session)
    .bind(kind)
    .bind(payload.to_string())
    .bind(clock::now_ms())
    .fetch_one(&mut *conn)
    .await?;
    crate::db::notify_change(conn, session.as_str()).await?;
    Ok(id)
}

/// The session's events after `after`, oldest first, at most `limit`.
pub async fn since(
    conn: &mut AnyConnection,
    session: &SessionId,
    after: i64,
    limit: i64,
) -> sqlx::Result<Vec<Event>> {
    // `message:created` events written since the text is kept only in its
    // message get it back here; older ones carry it already.
    let sql = match Dialect::of(conn) {
        Dialect::Sqlite => {
            "SELECT e.id, e.session_id, e.kind,
                    CASE WHEN m.id IS NOT NULL AND json_extract(e.payload, '$.text') IS NULL
                         THEN json_set(e.payload, '$.text', m.body) ELSE e.payload END AS payload,
                    e.created_at
             FROM events e
             LEFT JOIN messages m
               ON e.kind = 'message:created' AND m.id = json_extract(e.payload, '$.message_id')
             WHERE e.session_id = $1 AND e.id > $2 ORDER BY e.id LIMIT $3"
        }
        Dialect::Postgres => {
            "SELECT e.id, e.session_id, e.kind,
                    CASE WHEN m.id IS NOT NULL AND NOT (CAST(e.payload AS jsonb) ? 'text')
                         THEN CAST(jsonb_set(CAST(e.payload AS jsonb), '{text}', to_jsonb(m.body)) AS text)
                         ELSE e.payload END AS payload,
                    e.created_at
             FROM events e
             LEFT JOIN messages m
               ON e.kind = 'message:created'
              AND m.id = CAST(CAST(e.payload AS jsonb) ->> 'message_id' AS BIGINT)
             WHERE e.session_id = $1 AND e.id > $2 ORDER BY e.id LIMIT $3"
        }
    };
    sqlx::query_as(sql)
        .bind(session)
        .bind(after)
        .bind(limit)
        .fetch_all(conn)
        .await
}

/// The id that wakes every listener ([`Hub::wake_all`]); never a session's.
const EVERY: &str = "00000000-0000-0000-0000-000000000000";

/// In-process wake-ups: "session S has something new". Carries no data, so
/// nothing sensitive can travel through it and a slow listener that lags
/// only has to re-read the database.
#[derive(Debug, Clone)]
pub struct Hub {
    tx: broadcast::Sender<Arc<SessionId>>,
    closing: Arc<watch::Sender<bool>>,
}

impl Default for Hub {
    fn default() -> Self {
        Self {
            tx: broadcast::channel(4096).0,
            closing: Arc::new(watch::channel(false).0),
        }
    }
}

impl Hub {
    /// Tells every listener that `session` changed. Call after the commit.
    pub fn publish(&self, session: &SessionId) {
        // No receivers is normal: nobody is watching.
        let _ = self.tx.send(Arc::new(session.clone()));
    }

    pub fn subscribe(&self) -> Listener {
        Listener {
            rx: self.tx.subscribe(),
            closing: self.closing.subscribe(),
        }
    }

    /// Wakes every listener: another daemon's changes may have been missed,
    /// so everything is read again.
    pub fn wake_all(&self) {
        // A lagging listener re-reads; one note per listener ends its wait.
        let _ = self
            .tx
            .send(Arc::new(SessionId::parse(EVERY).expect("a valid id")));
    }

    /// Ends every stream and long-poll: the daemon is shutting down, and
    /// open connections must not hold the graceful shutdown up.
    pub fn close(&self) {
        self.closing.send_replace(true);
    }
}

/// A subscription to the hub.
pub struct Listener {
    rx: broadcast::Receiver<Arc<SessionId>>,
    closing: watch::Receiver<bool>,
}

impl Listener {
    /// Waits until `session` may have changed. Returns false when the hub is
    /// gone (shutdown). A lagging listener is simply woken: it re-reads.
    pub async fn changed(&mut self, session: &SessionId) -> bool {
        loop {
            if *self.closing.borrow() {
                return false;
            }
            let note = tokio::select! {
                note = self.rx.recv() => note,
                _ = self.closing.changed() => return false,
            };
            match note {
                Ok(s) if *s == *session || s.as_str() == EVERY => return true,
                Ok(_) => continue,
                Err(broadcast::error::RecvError::Lagged(_)) => return true,
                Err(broadcast::error::RecvError::Closed) => return false,
            }
        }
    }
}
