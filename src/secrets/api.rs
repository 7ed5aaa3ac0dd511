//! The vault over HTTP: names for API tokens with `env:read`/`env:write`,
//! values only to the executor path (`GET /api/v1/sessions/{id}/env`).

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::routing::{get, put};
use axum::{Json, Router};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tracing::instrument;

use super::{
    EnvVarName, SecretValue, Target, delete_value, effective_env, list_env_vars, set_value,
};
use crate::AppState;
use crate::access::{self, Need};
use crate::api::{ApiJson, parse_query};
use crate::audit::{self, Actor, ClientAddr, Entry};
use crate::auth::Principal;
use crate::auth::tokens::TokenScope;
use crate::error::{AppError, AppResult};
use crate::ids::UserId;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/sessions/{id}/env", get(read_session_env))
        .route("/api/v1/env", get(list_env))
        .route(
            "/api/v1/env/{name}",
            put(put_env_var).delete(delete_env_var),
        )
}

#[instrument(skip_all)]
async fn read_session_env(
    State(state): State<AppState>,
    principal: Principal,
    Path(id): Path<String>,
) -> AppResult<Json<Value>> {
    let session = access::authorize(&state, (&principal).into(), &id, Need::ReadEnv).await?;
    let mut conn = state.db.read.acquire().await?;
    let env = effective_env(&mut conn, &state.keyring, &session.creator_id, &session.id).await?;
    let env: Map<String, Value> = env
        .0
        .into_iter()
        .map(|(name, value)| (name, Value::String(value.expose_secret().to_owned())))
        .collect();
    Ok(Json(json!({ "session_id": session.id, "env": env })))
}

async fn list_env(State(state): State<AppState>, principal: Principal) -> AppResult<Json<Value>> {
    let user = principal
        .user_with_scope(TokenScope::EnvWrite)
        .or_else(|_| principal.user_with_scope(TokenScope::EnvRead))?;
    let mut conn = state.db.read.acquire().await?;
    Ok(Json(
        json!({ "env_vars": list_env_vars(&mut conn, user).await? }),
    ))
}

/// Where a value goes: `global`, or `session` with `session_id`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Placement {
    scope: Option<String>,
    session_id: Option<String>,
}

async fn target(state: &AppState, principal: &Principal, at: &Placement) -> AppResult<Target> {
    match (
        at.scope.as_deref().unwrap_or("global"),
        at.session_id.as_deref(),
    ) {
        ("global", None) => Ok(Target::Global),
        ("global", Some(_)) => Err(AppError::invalid(
            "unexpected_session_id",
            "`session_id` goes with `scope: session` only",
        )),
        ("session", Some(id)) => {
            let session = access::authorize(state, principal.into(), id, Need::WriteEnv).await?;
            Ok(Target::Session(session.id))
        }
        ("session", None) => Err(AppError::invalid(
            "session_id_required",
            "`scope: session` needs the `session_id` the value is for",
        )),
        _ => Err(AppError::invalid(
            "invalid_scope",
            "`scope` is `global` or `session`",
        )),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PutEnvVarBody {
    value: SecretString,
    scope: Option<String>,
    session_id: Option<String>,
}

#[instrument(skip_all)]
async fn put_env_var(
    State(state): State<AppState>,
    principal: Principal,
    client: ClientAddr,
    Path(name): Path<String>,
    ApiJson(body): ApiJson<PutEnvVarBody>,
) -> AppResult<StatusCode> {
    let user = principal.user_with_scope(TokenScope::EnvWrite)?;
    let name = EnvVarName::parse(&name)?;
    let value = SecretValue::parse(&name, body.value)?;
    let placement = Placement {
        scope: body.scope,
        session_id: body.session_id,
    };
    let target = target(&state, &principal, &placement).await?;
    let mut tx = state.db.begin_write().await?;
    set_value(&mut tx, &state.keyring, user, &target, &name, &value, user).await?;
    audit_env(&mut tx, "env.set", user, &client, &target, &name).await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn delete_env_var(
    State(state): State<AppState>,
    principal: Principal,
    client: ClientAddr,
    Path(name): Path<String>,
    RawQuery(query): RawQuery,
) -> AppResult<StatusCode> {
    let user = principal.user_with_scope(TokenScope::EnvWrite)?;
    let placement: Placement = parse_query(query.as_deref())?;
    let name = EnvVarName::parse(&name)?;
    let target = target(&state, &principal, &placement).await?;
    let mut tx = state.db.begin_write().await?;
    delete_value(&mut tx, user, &target, &name).await?;
    audit_env(&mut tx, "env.delete", user, &client, &target, &name).await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Records a change to a user's vault: names and scope, never the value.
pub async fn audit_env(
    conn: &mut sqlx::SqliteConnection,
    action: &'static str,
    user: &UserId,
    client: &ClientAddr,
    target: &Target,
    name: &EnvVarName,
) -> AppResult<()> {
    let entry = Entry {
        action,
        session: target.session(),
        names: Some(name.to_string()),
        scope: Some(target.scope()),
        ..Default::default()
    };
    audit::append(conn, &Actor::User(user.clone()), client, entry).await?;
    Ok(())
}
