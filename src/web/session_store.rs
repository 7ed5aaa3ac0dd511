//! tower-sessions' store over the domain's browser sessions
//! (`widgetd_domain::auth::browser`): only signed-in sessions are kept.

use async_trait::async_trait;
use time::OffsetDateTime;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, SessionStore};
use widgetd_domain::auth::browser;
use widgetd_domain::db::Db;

#[derive(Debug, Clone)]
pub struct DbSessionStore {
    db: Db,
}

impl DbSessionStore {
    pub fn new(db: Db) -> Self {
        Self { db }
    }
}

/// The key a session is stored under: the SHA-256 of its id.
pub fn id_hash(id: &Id) -> Vec<u8> {
    browser::id_hash(&id.to_string())
}

fn backend(err: impl std::fmt::Display) -> session_store::Error {
    session_store::Error::Backend(err.to_string())
}

fn expiry_ms(record: &Record) -> i64 {
    i64::try_from(record.expiry_date.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

fn encode(record: &Record) -> session_store::Result<String> {
    serde_json::to_string(&record.data).map_err(|e| session_store::Error::Encode(e.to_string()))
}

#[async_trait]
impl SessionStore for DbSessionStore {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        if record.data.is_empty() {
            return Ok(());
        }
        let data = encode(record)?;
        // 128 random bits collide in theory only; retry on the unique key anyway.
        while !browser::insert(&self.db, &id_hash(&record.id), &data, expiry_ms(record))
            .await
            .map_err(backend)?
        {
            record.id = Id::default();
        }
        Ok(())
    }

    async fn save(&self, record: &Record) -> session_store::Result<()> {
        // Only signed-in sessions are kept: a stranger's cookie, real or
        // made up, must not make us write a row per request.
        if record.data.is_empty() {
            return Ok(());
        }
        let data = encode(record)?;
        browser::save(&self.db, &id_hash(&record.id), &data, expiry_ms(record))
            .await
            .map_err(backend)
    }

    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        let row = browser::load(&self.db, &id_hash(id))
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
        browser::delete(&self.db, &id_hash(id))
            .await
            .map_err(backend)
    }
}
