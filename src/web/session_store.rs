//! Browser sessions in SQLite, keyed by the SHA-256 of the session id: the
//! cookie is the only place the id itself exists, so a copy of the database
//! does not let anyone ride a session.

use async_trait::async_trait;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, SessionStore};

use widgetd_domain::db::Db;

#[derive(Debug, Clone)]
pub struct DbSessionStore {
    db: Db,
}

impl DbSessionStore {
    pub fn new(db: Db) -> Self {
        Self { db }
    }

    /// Deletes expired sessions; returns how many.
    pub async fn delete_expired(&self) -> sqlx::Result<u64> {
        let now = widgetd_domain::clock::now_ms();
        let done = sqlx::query("DELETE FROM web_sessions WHERE expires_at <= $1")
            .bind(now)
            .execute(&self.db.write)
            .await?;
        Ok(done.rows_affected())
    }
}

/// The key a session is stored under: the SHA-256 of its id.
pub fn id_hash(id: &Id) -> Vec<u8> {
    Sha256::digest(id.to_string().as_bytes()).to_vec()
}

fn backend(err: impl std::fmt::Display) -> session_store::Error {
    session_store::Error::Backend(err.to_string())
}

fn expiry_ms(record: &Record) -> i64 {
    i64::try_from(record.expiry_date.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

#[async_trait]
impl SessionStore for DbSessionStore {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        if record.data.is_empty() {
            return Ok(());
        }
        let data = serde_json::to_string(&record.data)
            .map_err(|e| session_store::Error::Encode(e.to_string()))?;
        // 128 random bits collide in theory only; retry on the unique key anyway.
        // Through the writer: the row is committed with the batch it joins.
        let mut tx = self.db.begin_write().await.map_err(backend)?;
        loop {
            let inserted = sqlx::query(
                "INSERT INTO web_sessions (id_hash, data, expires_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            )
            .bind(id_hash(&record.id))
            .bind(&data)
            .bind(expiry_ms(record))
            .execute(&mut *tx)
            .await
            .map_err(backend)?;
            if inserted.rows_affected() == 1 {
                return tx.commit().await.map_err(backend);
            }
            record.id = Id::default();
        }
    }

    async fn save(&self, record: &Record) -> session_store::Result<()> {
        // Only signed-in sessions are kept: a stranger's cookie, real or
        // made up, must not make us write a row per request.
        if record.data.is_empty() {
            return Ok(());
        }
        let data = serde_json::to_string(&record.data)
            .map_err(|e| session_store::Error::Encode(e.to_string()))?;
        let mut tx = self.db.begin_write().await.map_err(backend)?;
        sqlx::query(
            "INSERT INTO web_sessions (id_hash, data, expires_at) VALUES ($1, $2, $3)
             ON CONFLICT (id_hash) DO UPDATE SET data = excluded.data, expires_at = excluded.expires_at",
        )
        .bind(id_hash(&record.id))
        .bind(data)
        .bind(expiry_ms(record))
        .execute(&mut *tx)
        .await
        .map_err(backend)?;
        tx.commit().await.map_err(backend)
    }

    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        let row: Option<(String, i64)> = sqlx::query_as(
            "SELECT data, expires_at FROM web_sessions WHERE id_hash = $1 AND expires_at > $2",
        )
        .bind(id_hash(id))
        .bind(widgetd_domain::clock::now_ms())
        .fetch_optional(&self.db.read)
        .await
        .map_err(backend)?;
        let Some((data, expires_at)) = row else {
            return Ok(None);
        };
        let data =
            serde_json::from_str(&data).map_err(|e| session_store::Error::Decode(e.to_string()))?;
        let expiry_date =
            OffsetDateTime::from_unix_timestamp_nanos(i128::from(expires_at) * 1_000_000)
                .map_err(|e| session_store::Error::Decode(e.to_string()))?;
        Ok(Some(Record {
            id: *id,
            data,
            expiry_date,
        }))
    }

    async fn delete(&self, id: &Id) -> session_store::Result<()> {
        let mut tx = self.db.begin_write().await.map_err(backend)?;
        sqlx::query("DELETE FROM web_sessions WHERE id_hash = $1")
            .bind(id_hash(id))
            .execute(&mut *tx)
            .await
            .map_err(backend)?;
        tx.commit().await.map_err(backend)
    }
}
