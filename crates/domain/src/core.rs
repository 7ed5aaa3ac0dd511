//! The domain's shared state: what widgets, sessions, secrets, prompts,
//! access checks, the CLI and the background jobs work with. The server's
//! state holds a `Core` and derefs to it, so a handler passes `&state`
//! where the domain takes `&Core`.

use crate::crypto::Keyring;
use crate::db::{Db, Stamp};
use crate::events::Hub;
use crate::notify::Notifiers;
use crate::{auth, prompts, sessions, widgets};

/// The database, the keyring, the settings, the event hub, the auth cache,
/// the widget rows kept in memory and the notifiers: everything the domain
/// needs, shared
/// as `Arc<Core>` by whoever must own it (background jobs, the demo agent,
/// spawned acknowledgements).
pub struct Core {
    pub db: Db,
    pub keyring: Keyring,
    pub settings: Settings,
    pub hub: Hub,
    /// Who tokens, users and sessions are, checked against the auth epoch.
    pub auth_cache: auth::AuthCache,
    /// Widget rows read, checked against the database's stamp.
    pub widget_rows: widgets::RowCache,
    /// Where a widget's change goes besides the transcript.
    pub notifiers: Notifiers,
}

impl Core {
    /// A core without notifiers: [`Core::with_notifiers`] adds them.
    pub fn new(db: Db, keyring: Keyring, settings: Settings) -> Self {
        Self {
            db,
            keyring,
            settings,
            hub: Hub::default(),
            auth_cache: auth::AuthCache::default(),
            widget_rows: widgets::RowCache::default(),
            notifiers: Notifiers::default(),
        }
    }

    /// The same core, telling `notifiers` of every widget's change.
    pub fn with_notifiers(mut self, notifiers: Notifiers) -> Self {
        self.notifiers = notifiers;
        self
    }

    /// The database's stamp for the current request (`db/changes.rs`),
    /// taken before reading what is to be kept under it. On SQLite the
    /// poll's; on PostgreSQL the one read with the auth epoch, by a read
    /// that started after the request arrived. `None`: read the database.
    pub async fn stamp(&self) -> Option<Stamp> {
        if self.db.backend().dialect().sql().shared_by_daemons() {
            self.auth_cache.epoch(&self.db).await.stamp()
        } else {
            self.db.stamp().await
        }
    }
}

/// The domain's settings. Holds no secret.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The URL people and agents reach this daemon at, without trailing `/`.
    pub public_url: String,
    /// The tag that opens every resume prompt.
    pub prompt_tag: String,
    /// How long a widget stays pending before it expires.
    pub widget_ttl_ms: i64,
    /// The MCP elicitation modes `/mcp` may use (`serve --elicitation`).
    pub elicitation: sessions::Elicitation,
}

impl Settings {
    /// Defaults for a daemon reached at `public_url`.
    pub fn new(public_url: impl Into<String>) -> Self {
        Self {
            public_url: public_url.into().trim_end_matches('/').to_owned(),
            prompt_tag: prompts::DEFAULT_TAG.to_owned(),
            widget_ttl_ms: 7 * 24 * 3600 * 1000,
            elicitation: sessions::Elicitation::Url,
        }
    }

    /// `scheme://host[:port]` of the public URL, as browsers send in `Origin`.
    pub fn public_origin(&self) -> &str {
        let after_scheme = self.public_url.find("://").map_or(0, |i| i + 3);
        let end = self.public_url[after_scheme..]
            .find('/')
            .map_or(self.public_url.len(), |i| after_scheme + i);
        &self.public_url[..end]
    }
}
