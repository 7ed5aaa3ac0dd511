//! The HTTP layer's state: the domain's [`Core`] and what only the server
//! keeps (its settings, `/metrics` counters, agent tokens shown once, open
//! streams).

use std::ops::Deref;
use std::sync::Arc;

use widgetd_domain::Core;
use widgetd_domain::crypto::Keyring;
use widgetd_domain::db::Db;

use crate::metrics::Metrics;
use crate::settings::Settings;
use crate::stream_limits::OpenStreams;
use crate::web::shown_once::ShownOnce;

/// Everything a request handler may use: the domain's [`Core`] (which
/// `Inner` derefs to, so `state.db` and `&state` as `&Core` work) and what
/// only the HTTP layer keeps.
pub struct Inner {
    /// What the domain (widgets, sessions, secrets, …) works with.
    pub core: Arc<Core>,
    /// The daemon's settings; the domain's part is also `core.settings`.
    pub config: Settings,
    pub metrics: Metrics,
    /// Agent tokens waiting to be shown once after a redirect.
    pub shown_once: ShownOnce,
    /// Open event streams and long-polls, capped per caller and address.
    pub open_streams: OpenStreams,
}

impl Deref for Inner {
    type Target = Core;
    fn deref(&self) -> &Core {
        &self.core
    }
}

/// Shared, cheaply cloned application state of the HTTP layer.
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

impl AppState {
    /// The state of a daemon with `settings`, its core telling the
    /// notifiers (webhooks, Slack) of every widget's change.
    pub fn new(db: Db, keyring: Keyring, settings: Settings) -> Self {
        let core = Core::new(db, keyring, settings.domain.clone())
            .with_notifiers(widgetd_notify::notifiers());
        Self::with_core(Arc::new(core), settings)
    }

    /// The state around a core that exists already (`settings.domain`
    /// should be the core's).
    pub fn with_core(core: Arc<Core>, settings: Settings) -> Self {
        Self(Arc::new(Inner {
            core,
            config: settings.normalized(),
            metrics: Metrics::default(),
            shown_once: ShownOnce::default(),
            open_streams: OpenStreams::default(),
        }))
    }
}

impl Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}
