//! What browsers talk to: cookie sessions, login, CSRF.

mod account;
mod admin;
pub mod auth;
pub mod pages;
mod session_settings;
mod session_store;
pub mod shown_once;
mod slack;
mod views;
mod webhooks;

use axum::Router;
use axum::routing::{get, post};
use time::Duration;
use tower_sessions::cookie::SameSite;
use tower_sessions::{Expiry, SessionManagerLayer};

pub use auth::{CurrentUser, check_csrf};
pub use session_store::{DbSessionStore, id_hash};
pub use shown_once::ShownOnce;

use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .merge(webhooks::router())
        .merge(slack::router())
        .route("/login", get(pages::view_login_get).post(auth::login))
        .route("/logout", post(auth::logout))
        .route("/api/v1/me", get(auth::me))
        .route("/", get(pages::view_sessions_get))
        // The sessions are listed at `/`; a typed or bookmarked `/sessions`
        // goes there instead of getting a bare 405.
        .route(
            "/sessions",
            get(|| async { axum::response::Redirect::to("/") }).post(pages::create_session_form),
        )
        .route("/sessions/{id}", get(pages::view_transcript_get))
        .route(
            "/sessions/{id}/settings",
            get(session_settings::view_session_settings_get),
        )
        .route(
            "/sessions/{id}/sharing",
            post(session_settings::share_session_form),
        )
        .route(
            "/sessions/{id}/agent-token",
            post(session_settings::revoke_agent_token_form),
        )
        .route(
            "/sessions/{id}/archive",
            post(session_settings::archive_session_form),
        )
        .route(
            "/sessions/{id}/widgets/{widget_id}",
            get(pages::view_widget_get),
        )
        .route(
            "/settings/env",
            get(pages::view_settings_env_get).post(pages::set_env_form),
        )
        .route("/settings/env/delete", post(pages::delete_env_form))
        .route(
            "/settings/approvals",
            get(pages::view_settings_approvals_get),
        )
        .route(
            "/settings/approvals/revoke",
            post(pages::revoke_approval_form),
        )
        .route(
            "/settings/password",
            get(account::view_settings_password_get).post(account::change_password_form),
        )
        .route("/widgets/{id}", get(pages::view_widget_page_get))
        .route("/static/{name}", get(pages::static_file))
        .route("/widgets/{id}/image", get(pages::view_widget_image_get))
        .route("/admin/users", get(admin::view_users_get))
        .route("/admin/users/{action}", post(admin::change_user_form))
        .route("/admin/audit", get(admin::view_audit_get))
}

/// The cookie: `__Host-` prefixed and `Secure` under TLS, HttpOnly,
/// SameSite=Strict, path `/`, ending after the idle timeout.
pub fn session_layer(state: &AppState) -> SessionManagerLayer<DbSessionStore> {
    let tls = state.settings.public_url.starts_with("https://");
    let name = if tls { "__Host-widgetd" } else { "widgetd" };
    SessionManagerLayer::new(DbSessionStore::new(state.db.clone()))
        .with_name(name)
        .with_secure(tls)
        .with_http_only(true)
        .with_same_site(SameSite::Strict)
        .with_path("/")
        // Saved only when changed: a read must not write. The idle timeout
        // still slides because `CurrentUser` touches the session once per
        // `auth::TOUCH_EVERY_MS` of activity.
        .with_always_save(false)
        .with_expiry(Expiry::OnInactivity(Duration::seconds(
            auth::IDLE_TIMEOUT_SECS,
        )))
}
