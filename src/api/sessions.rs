//! `POST /api/v1/sessions`, a session's sharing, and its agent token.

use axum::extract::State;
use axum::http::StatusCode;
use std::collections::BTreeMap;

use axum::extract::Path;
use axum::routing::{get, post};
use axum::{Json, Router};
use secrecy::ExposeSecret;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::ApiJson;
use crate::error::WebResult;
use crate::state::AppState;
use widgetd_domain::Error;
use widgetd_domain::access::{self, Need};
use widgetd_domain::audit::{Actor, ClientAddr, Entry};
use widgetd_domain::auth::Principal;
use widgetd_domain::auth::tokens::TokenScope;
use widgetd_domain::sessions::{
    NewSession, Sharing, create_session, parse_title, revoke_agent_token, sharing, update_sharing,
};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/sessions", post(create_session_api))
        .route(
            "/api/v1/sessions/{id}/sharing",
            get(read_sharing).put(update_sharing_api),
        )
        .route(
            "/api/v1/sessions/{id}/agent-token",
            post(reissue_agent_token_api).delete(revoke_agent_token_api),
        )
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct CreateSessionBody {
    title: Option<String>,
    /// The MCP elicitation modes this session allows (`off`, `url`,
    /// `form`, `both`; `url` when absent: form mode only by this opt-in);
    /// the daemon's `--elicitation` narrows it further.
    #[serde(default)]
    elicitation: Option<widgetd_domain::sessions::Elicitation>,
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
    client: ClientAddr,
    body: Option<ApiJson<CreateSessionBody>>,
) -> WebResult<(StatusCode, Json<Value>)> {
    let creator = principal.user_with_scope(TokenScope::Sessions)?;
    let body = body.map(|b| b.0).unwrap_or_default();
    let title = parse_title(body.title.as_deref())?;
    let mut tx = state.db.begin_write().await?;
    let new = create_session(&mut tx, creator, title).await?;
    let modes = body.elicitation.unwrap_or_default();
    if let Some(modes) = body.elicitation {
        widgetd_domain::sessions::set_elicitation(&mut tx, &new.session.id, modes).await?;
    }
    let entry = Entry {
        action: "session.create",
        session: Some(&new.session.id),
        ..Default::default()
    };
    widgetd_domain::audit::append(&mut tx, &Actor::User(creator.clone()), &client, entry).await?;
    tx.commit().await?;
    let mut answer = new_session_json(&state, &new);
    // What `/mcp` will use with a client that declares it.
    answer["elicitation"] = json!(modes.and(state.settings.elicitation));
    Ok((StatusCode::CREATED, Json(answer)))
}

/// The sharing as JSON: `{"others_can", "grants": {name: access}}`.
fn sharing_json(others_can: Sharing, grants: Vec<(String, Sharing)>) -> Value {
    let grants: serde_json::Map<String, Value> = grants
        .into_iter()
        .map(|(name, access)| (name, json!(access)))
        .collect();
    json!({ "others_can": others_can, "grants": grants })
}

/// `GET /api/v1/sessions/{id}/sharing` (the creator's `sessions` token).
async fn read_sharing(
    State(state): State<AppState>,
    principal: Principal,
    Path(id): Path<String>,
) -> WebResult<Json<Value>> {
    let session = access::authorize(&state, (&principal).into(), &id, Need::Share).await?;
    let (others_can, grants) = sharing(&mut *state.db.read.acquire().await?, &session).await?;
    Ok(Json(sharing_json(others_can, grants)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SharingBody {
    #[serde(default)]
    others_can: Option<Sharing>,
    #[serde(default)]
    grants: BTreeMap<String, Sharing>,
}

/// `PUT /api/v1/sessions/{id}/sharing`: `others_can` and/or grants by user name.
async fn update_sharing_api(
    State(state): State<AppState>,
    principal: Principal,
    client: ClientAddr,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<SharingBody>,
) -> WebResult<Json<Value>> {
    let session = access::authorize(&state, (&principal).into(), &id, Need::Share).await?;
    let Principal::User { user_id, .. } = &principal else {
        return Err(Error::Forbidden("only the creator may share a session".into()).into());
    };
    let grants: Vec<(String, Sharing)> = body.grants.into_iter().collect();
    let actor = Actor::User(user_id.clone());
    let (others_can, grants) =
        update_sharing(&state, &session, body.others_can, &grants, &actor, &client).await?;
    Ok(Json(sharing_json(others_can, grants)))
}

/// The session's host (the creator's `sessions` token) and the actor it
/// acts as.
async fn hosted(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> WebResult<(widgetd_domain::sessions::Session, Actor)> {
    let session = access::authorize(state, principal.into(), id, Need::Host).await?;
    let actor = match principal {
        Principal::User { user_id, .. } => Actor::User(user_id.clone()),
        Principal::Agent { session_id } => Actor::Agent(session_id.clone()),
    };
    Ok((session, actor))
}

/// `POST /api/v1/sessions/{id}/agent-token`: revokes the session's agent
/// token and issues a new one, returned this once.
async fn reissue_agent_token_api(
    State(state): State<AppState>,
    principal: Principal,
    client: ClientAddr,
    Path(id): Path<String>,
) -> WebResult<Json<Value>> {
    let (session, actor) = hosted(&state, &principal, &id).await?;
    let done = revoke_agent_token(&state.db, &session, true, &actor, &client).await?;
    // Open streams of the old token check again now and end.
    state.hub.publish(&session.id);
    let token = done.new_token.as_ref().map(ExposeSecret::expose_secret);
    Ok(Json(json!({
        "session_id": session.id,
        "agent_token": token,
        "mcp_url": format!("{}/mcp", state.settings.public_url),
        "revoked": done.revoked,
    })))
}

/// `DELETE /api/v1/sessions/{id}/agent-token`: revokes the session's agent
/// token without a new one; the session is not archived.
async fn revoke_agent_token_api(
    State(state): State<AppState>,
    principal: Principal,
    client: ClientAddr,
    Path(id): Path<String>,
) -> WebResult<Json<Value>> {
    let (session, actor) = hosted(&state, &principal, &id).await?;
    let done = revoke_agent_token(&state.db, &session, false, &actor, &client).await?;
    state.hub.publish(&session.id);
    Ok(Json(
        json!({ "session_id": session.id, "revoked": done.revoked }),
    ))
}
