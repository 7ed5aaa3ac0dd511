//! widgetd: lets AI agents ask people for input through inline widgets, and
//! keeps the secrets people type out of the model.
//!
//! `main.rs` is a thin CLI over this library; tests use the same [`app`] and
//! [`serve`] on their own listener.

pub mod api;
pub mod auth;
pub mod cli;
pub mod clock;
pub mod crypto;
pub mod db;
pub mod error;
pub mod exec;
pub mod ids;
pub mod secrets;
pub mod sessions;
pub mod startup;

use std::future::Future;
use std::ops::Deref;
use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use axum::routing::get;
use tokio::net::TcpListener;

use crate::crypto::Keyring;
use crate::db::Db;

/// Settings the HTTP surface needs. Holds no secret.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The URL people and agents reach this daemon at, without trailing `/`.
    pub public_url: String,
}

/// Everything a request handler may use.
pub struct Inner {
    pub db: Db,
    pub keyring: Keyring,
    pub settings: Settings,
}

/// Shared, cheaply cloned application state.
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

impl AppState {
    pub fn new(db: Db, keyring: Keyring, settings: Settings) -> Self {
        Self(Arc::new(Inner {
            db,
            keyring,
            settings,
        }))
    }
}

impl Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

/// The whole HTTP application.
pub fn app(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .merge(sessions::api::router())
        .merge(secrets::api::router())
        .layer(axum::middleware::map_response(security_headers))
        .with_state(state)
}

/// Headers on every response, errors included: nothing here may be cached,
/// sniffed, framed or leak a referrer.
async fn security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    let fixed = [
        (header::CACHE_CONTROL, "no-store"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; frame-ancestors 'none'",
        ),
    ];
    for (name, value) in fixed {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// Serves `state` on `listener` until `shutdown` completes, then lets
/// in-flight requests finish.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, app(state))
        .with_graceful_shutdown(shutdown)
        .await
}
