//! Durable events for live views. Every state change writes an event row in
//! its own transaction; after the commit the [`Hub`] wakes the streams and
//! long-polls of that session, which read what is new from the database.
//! The database is the source of truth, so a reconnecting client resumes
//! exactly with `Last-Event-ID`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::Value;
use sqlx::AnyConnection;
use tokio::sync::watch;

use crate::clock;
use crate::db::{Dialect, Script, WriteTx};
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
/// the hub after the commit. Other daemons hear of it after the commit
/// (`WriteTx::notify_after_commit`).
pub async fn record(
    tx: &mut WriteTx,
    session: &SessionId,
    kind: &'static str,
    payload: &Value,
) -> sqlx::Result<()> {
    let mut script = Script::new(Dialect::of(tx));
    record_into(tx, &mut script, session, kind, payload).await?;
    script.run(tx).await
}

/// [`record`] as one of the writes of `script`, sent with the others.
pub async fn record_into(
    tx: &mut WriteTx,
    script: &mut Script,
    session: &SessionId,
    kind: &'static str,
    payload: &Value,
) -> sqlx::Result<()> {
    // Ids grow in commit order within the session (PostgreSQL: the
    // session's lock is held to the commit), so a replay never skips one.
    tx.lock(crate::db::Lock::Session(session.as_str())).await?;
    script.push(
        "event",
        "INSERT INTO events (session_id, kind, payload, created_at) VALUES ($1, $2, $3, $4)",
        |v| {
            v.add(session.clone())
                .add(kind)
                .add(payload.to_string())
                .add(clock::now_ms());
        },
    );
    tx.notify_after_commit(session.as_str());
    Ok(())
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
    let sql = Dialect::of(conn).sql().events_since();
    sqlx::query_as(sql)
        .bind(session)
        .bind(after)
        .bind(limit)
        .fetch_all(conn)
        .await
}

/// In-process wake-ups: "session S has something new". One channel per
/// session that someone listens to, so a change wakes the listeners of its
/// session and no other; a channel exists only while it has listeners.
/// Carries no data, so nothing sensitive can travel through it, and a
/// listener woken for anything simply re-reads the database.
#[derive(Debug, Clone)]
pub struct Hub {
    sessions: Arc<Mutex<HashMap<SessionId, watch::Sender<()>>>>,
    /// `true` once the daemon shuts down; a bare change wakes everyone.
    everyone: Arc<watch::Sender<bool>>,
}

impl Default for Hub {
    fn default() -> Self {
        Self {
            sessions: Arc::default(),
            everyone: Arc::new(watch::channel(false).0),
        }
    }
}

impl Hub {
    /// Tells the listeners of `session` that it changed. Call after the
    /// commit.
    pub fn publish(&self, session: &SessionId) {
        let sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        // No channel is normal: nobody is watching.
        if let Some(channel) = sessions.get(session) {
            channel.send_replace(());
        }
    }

    /// Listens to `session`. Subscribe before reading the database, so a
    /// change committed in between is not missed.
    pub fn subscribe(&self, session: &SessionId) -> Listener {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        let rx = match sessions.get(session) {
            Some(channel) => channel.subscribe(),
            None => {
                let (tx, rx) = watch::channel(());
                sessions.insert(session.clone(), tx);
                rx
            }
        };
        Listener {
            rx,
            everyone: self.everyone.subscribe(),
            hub: self.sessions.clone(),
            session: session.clone(),
        }
    }

    /// Wakes every listener: another daemon's changes may have been missed,
    /// so everything is read again.
    pub fn wake_all(&self) {
        self.everyone.send_modify(|_| {});
    }

    /// Ends every stream and long-poll: the daemon is shutting down, and
    /// open connections must not hold the graceful shutdown up.
    pub fn close(&self) {
        self.everyone.send_replace(true);
    }

    /// How many sessions have listeners right now.
    pub fn channels(&self) -> usize {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }
}

/// A subscription to one session's changes.
pub struct Listener {
    rx: watch::Receiver<()>,
    everyone: watch::Receiver<bool>,
    hub: Arc<Mutex<HashMap<SessionId, watch::Sender<()>>>>,
    session: SessionId,
}

impl Listener {
    /// Waits until the session may have changed. Returns false when the
    /// daemon shuts down.
    pub async fn changed(&mut self) -> bool {
        if *self.everyone.borrow() {
            return false;
        }
        tokio::select! {
            // The hub keeps the sender while this listener lives.
            changed = self.rx.changed() => changed.is_ok() && !*self.everyone.borrow(),
            woken = self.everyone.changed() => woken.is_ok() && !*self.everyone.borrow_and_update(),
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let mut sessions = self.hub.lock().unwrap_or_else(|p| p.into_inner());
        // The last listener of its session (this one) takes the channel away.
        if sessions
            .get(&self.session)
            .is_some_and(|channel| channel.receiver_count() <= 1)
        {
            sessions.remove(&self.session);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    async fn woken(listener: &mut Listener) -> Option<bool> {
        tokio::time::timeout(Duration::from_millis(50), listener.changed())
            .await
            .ok()
    }

    #[tokio::test]
    async fn a_change_wakes_its_session_only_and_channels_go_with_their_listeners() {
        let hub = Hub::default();
        let (a, b) = (SessionId::generate(), SessionId::generate());
        let mut on_a = hub.subscribe(&a);
        let mut also_on_a = hub.subscribe(&a);
        let mut on_b = hub.subscribe(&b);
        assert_eq!(hub.channels(), 2);

        hub.publish(&a);
        assert_eq!(woken(&mut on_a).await, Some(true));
        assert_eq!(woken(&mut also_on_a).await, Some(true));
        assert_eq!(woken(&mut on_b).await, None, "b did not change");
        assert_eq!(woken(&mut on_a).await, None, "one change wakes once");

        hub.wake_all();
        assert_eq!(woken(&mut on_a).await, Some(true));
        assert_eq!(woken(&mut on_b).await, Some(true));

        drop(on_b);
        assert_eq!(hub.channels(), 1);
        hub.publish(&b);
        drop(also_on_a);
        assert_eq!(hub.channels(), 1);
        drop(on_a);
        assert_eq!(hub.channels(), 0);

        let mut late = hub.subscribe(&a);
        hub.close();
        assert_eq!(woken(&mut late).await, Some(false));
    }
}
