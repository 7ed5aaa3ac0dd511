//! `POST /api/v1/sessions`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use secrecy::ExposeSecret;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{NewSession, create_session, parse_title};
use crate::AppState;
use crate::api::ApiJson;
use crate::auth::Principal;
use crate::auth::tokens::TokenScope;
use crate::error::AppResult;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/v1/sessions", post(create_session_api))
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct CreateSessionBody {
    title: Option<String>,
}

/// The answer to a session creation, shared by the API and the CLI.
pub fn new_session_json(state: &AppState, new: &NewSession) -> Value {
    json!({
        "session_id": new.session.id,
        "agent_token": new.agent_token.expose_secret(),
        "mcp_url": format!("{}/mcp", state.settings.public_url),
    })
}

async fn create_session_api(
    State(state): State<AppState>,
    principal: Principal,
    body: Option<ApiJson<CreateSessionBody>>,
) -> AppResult<(StatusCode, Json<Value>)> {
    let creator = principal.user_with_scope(TokenScope::Sessions)?;
    let body = body.map(|b| b.0).unwrap_or_default();
    let title = parse_title(body.title.as_deref())?;
    let mut tx = state.db.begin_write().await?;
    let new = create_session(&mut tx, creator, title).await?;
    tx.commit().await?;
    Ok((StatusCode::CREATED, Json(new_session_json(&state, &new))))
}
