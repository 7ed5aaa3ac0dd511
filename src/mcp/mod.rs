//! MCP over Streamable HTTP at `/mcp` (being built).

use axum::Router;

use crate::AppState;

pub fn router(_state: &AppState) -> Router<AppState> {
    Router::new()
}
