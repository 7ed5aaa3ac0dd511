//! The agent host's queue: `GET …/prompts?wait=SECONDS` long-polls for
//! resume prompts not yet acknowledged; `POST …/prompts/{id}/ack` marks one
//! delivered. Until acknowledged, a prompt is handed out again.

use std::time::Duration;

use axum::extract::{Path, RawQuery, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::error::WebResult;
use crate::state::AppState;
use widgetd_domain::Error;
use widgetd_domain::access::{self, Need};
use widgetd_domain::auth::Principal;
use widgetd_domain::clock;
use widgetd_domain::input::parse_query;
use widgetd_domain::prompts::{ack, undelivered};

/// Longest long-poll; clients simply ask again.
pub const MAX_WAIT_SECS: u64 = 120;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/sessions/{id}/prompts", get(list_prompts))
        .route(
            "/api/v1/sessions/{id}/prompts/{prompt_id}/ack",
            post(ack_prompt),
        )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WaitQuery {
    #[serde(default)]
    wait: u64,
}

async fn list_prompts(
    State(state): State<AppState>,
    principal: Principal,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> WebResult<Json<Value>> {
    let session = access::authorize(&state, (&principal).into(), &id, Need::Host).await?;
    // A waiting poll holds a place in the stream caps and is re-authorized
    // while it waits: `middleware::hold_waits`, around every route.
    let wait: WaitQuery = parse_query(query.as_deref())?;
    let deadline = Instant::now() + Duration::from_secs(wait.wait.min(MAX_WAIT_SECS));
    // Subscribe before the first read, so a prompt queued in between wakes us.
    let mut listener = state.hub.subscribe(&session.id);
    loop {
        let prompts = undelivered(&mut *state.db.read.acquire().await?, &session.id).await?;
        if !prompts.is_empty() || Instant::now() >= deadline {
            let prompts: Vec<Value> = prompts
                .into_iter()
                .map(|p| {
                    json!({
                        "prompt_id": p.prompt_id,
                        "widget_id": p.widget_id,
                        "message_id": p.message_id,
                        "text": p.text,
                        "created_at": clock::rfc3339(p.created_at),
                    })
                })
                .collect();
            return Ok(Json(json!({ "prompts": prompts })));
        }
        match tokio::time::timeout_at(deadline, listener.changed()).await {
            Ok(true) | Err(_) => continue,
            Ok(false) => return Ok(Json(json!({ "prompts": [] }))),
        }
    }
}

async fn ack_prompt(
    State(state): State<AppState>,
    principal: Principal,
    Path((id, prompt_id)): Path<(String, String)>,
) -> WebResult<Json<Value>> {
    let session = access::authorize(&state, (&principal).into(), &id, Need::Host).await?;
    let prompt_id: i64 = prompt_id.parse().map_err(|_| Error::NotFound("prompt"))?;
    let mut tx = state.db.begin_write().await?;
    if !ack(&mut tx, &session.id, prompt_id).await? {
        return Err(Error::NotFound("prompt").into());
    }
    tx.commit().await?;
    Ok(Json(json!({ "prompt_id": prompt_id, "acked": true })))
}
