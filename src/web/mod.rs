//! What browsers talk to: cookie sessions, login, CSRF.

pub mod auth;
mod session_store;

use axum::Router;
use axum::routing::{get, post};
use time::Duration;
use tower_sessions::cookie::SameSite;
use tower_sessions::{Expiry, SessionManagerLayer};

pub use auth::{CurrentUser, check_csrf};
pub use session_store::SqliteSessionStore;

use crate::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/login", post(auth::login))
        .route("/logout", post(auth::logout))
        .route("/api/v1/me", get(auth::me))
}

/// The cookie: `__Host-` prefixed and `Secure` under TLS, HttpOnly,
/// SameSite=Strict, path `/`, ending after the idle timeout.
pub fn session_layer(state: &AppState) -> SessionManagerLayer<SqliteSessionStore> {
    let tls = state.settings.public_url.starts_with("https://");
    let name = if tls { "__Host-widgetd" } else { "widgetd" };
    SessionManagerLayer::new(SqliteSessionStore::new(state.db.clone()))
        .with_name(name)
        .with_secure(tls)
        .with_http_only(true)
        .with_same_site(SameSite::Strict)
        .with_path("/")
        .with_expiry(Expiry::OnInactivity(Duration::seconds(
            auth::IDLE_TIMEOUT_SECS,
        )))
}
