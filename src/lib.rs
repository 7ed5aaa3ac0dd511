//! widgetd's server: the HTTP API, the pages, MCP, the Slack and hook
//! endpoints and the command line, over the domain crate
//! (`widgetd_domain`) and the notifiers (`widgetd_notify`).
//!
//! `main.rs` is a thin CLI over this library; tests use the same [`app`] and
//! [`serve`] on their own listener.

pub mod api;
pub mod cards;
pub mod check;
pub mod cli;
pub mod connect;
pub mod demo;
pub mod error;
pub mod exec;
pub mod forwarded;
pub mod hooks;
pub mod host;
pub mod icons;
mod listen;
pub mod logging;
pub mod mcp;
pub mod metrics;
mod middleware;
pub mod ops;
pub mod restore;
pub mod settings;
pub mod state;
pub mod stream_limits;
pub mod web;

use std::future::Future;

use axum::Router;
use tokio::net::TcpListener;
use widgetd_domain::ids;

pub use crate::settings::Settings;
pub use crate::state::AppState;

/// The whole HTTP application.
pub fn app(state: AppState) -> Router {
    Router::new()
        .merge(ops::router())
        .merge(api::router())
        .merge(hooks::router())
        .merge(web::router())
        .layer(web::session_layer(&state))
        .merge(mcp::router(&state))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::hold_waits,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::check_host,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            ops::measure,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::resolve_client,
        ))
        .layer(axum::middleware::map_response(middleware::security_headers))
        .layer(axum::middleware::from_fn(middleware::unbuffered))
        .with_state(state)
}

/// Serves `state` on `listener` until `shutdown` completes, then lets
/// in-flight requests finish.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let hub = state.hub.clone();
    let woken = hub.clone();
    let follower = state.db.follow_changes(move |session| match session {
        Some(session) => {
            if let Some(session) = ids::SessionId::parse(session) {
                woken.publish(&session);
            }
        }
        None => woken.wake_all(),
    });
    let shutdown = async move {
        shutdown.await;
        // Open event streams and long-polls end, so the graceful shutdown
        // does not wait on them.
        hub.close();
    };
    let served = listen::serve(listener, app(state), shutdown).await;
    if let Some(follower) = follower {
        follower.abort();
    }
    served
}
