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

use crate::api::ApiJson;
use crate::error::{WebError, WebResult};
use crate::state::AppState;
use widgetd_domain::Error;
use widgetd_domain::access::{self, Need};
use widgetd_domain::audit::{self, Actor, ClientAddr, Entry};
use widgetd_domain::auth::Principal;
use widgetd_domain::auth::tokens::TokenScope;
use widgetd_domain::input::parse_query;
use widgetd_domain::secrets::{
    EnvVarName, SecretValue, Target, Unreadable, delete_value, effective_env, list_env_vars,
    set_value,
};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/sessions/{id}/env", get(read_session_env))
        .route("/api/v1/env", get(list_env))
        .route(
            "/api/v1/env/{name}",
            put(put_env_var).delete(delete_env_var),
        )
}

/// `?partial=true`: hand out the readable values even when others failed
/// to decrypt.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct EnvQuery {
    #[serde(default)]
    partial: bool,
}

/// `GET /api/v1/sessions/{id}/env`. A value that does not decrypt is named
/// with its reason and recorded in the audit log; the rest is handed out
/// only when the caller asks for it with `?partial=true`, since an env
/// silently missing a variable makes the agent fail in confusing ways.
#[instrument(skip_all)]
async fn read_session_env(
    State(state): State<AppState>,
    principal: Principal,
    client: ClientAddr,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> WebResult<Json<Value>> {
    let query: EnvQuery = parse_query(query.as_deref())?;
    let session = access::authorize(&state, (&principal).into(), &id, Need::ReadEnv).await?;
    let mut conn = state.db.read.acquire().await?;
    let env = effective_env(&mut conn, &state.keyring, &session.creator_id, &session.id).await?;
    drop(conn);
    if !env.unreadable.is_empty() {
        audit_unreadable(&state, &principal, &client, &session.id, &env.unreadable).await?;
        if !query.partial {
            return Err(unreadable_error(&env.unreadable).into());
        }
    }
    let values: Map<String, Value> = env
        .values
        .into_iter()
        .map(|(name, value)| (name, Value::String(value.expose_secret().to_owned())))
        .collect();
    Ok(Json(
        json!({ "session_id": session.id, "env": values, "unreadable": env.unreadable }),
    ))
}

/// `409 env_unreadable`, naming each variable, its scope and the reason.
fn unreadable_error(unreadable: &[Unreadable]) -> Error {
    let list: Vec<String> = unreadable
        .iter()
        .map(|u| format!("{} ({} scope): {}", u.name, u.scope, u.reason))
        .collect();
    Error::Conflict {
        code: "env_unreadable",
        message: format!(
            "these values could not be decrypted: {}. Set them again (or delete them) on the \
             settings page or with `PUT /api/v1/env/NAME`, run `widgetd keys status` to check the \
             keyring, or ask for the rest with `?partial=true`",
            list.join("; ")
        ),
    }
}

/// An `env.unreadable` audit row: who asked, which names, why; no value.
async fn audit_unreadable(
    state: &AppState,
    principal: &Principal,
    client: &ClientAddr,
    session: &widgetd_domain::ids::SessionId,
    unreadable: &[Unreadable],
) -> WebResult<()> {
    let names: Vec<&str> = unreadable.iter().map(|u| u.name.as_str()).collect();
    let reasons: Vec<String> = unreadable
        .iter()
        .map(|u| format!("{} ({}): {}", u.name, u.scope, u.reason))
        .collect();
    let actor = match principal {
        Principal::User { user_id, .. } => Actor::User(user_id.clone()),
        Principal::Agent { session_id } => Actor::Agent(session_id.clone()),
    };
    let entry = Entry {
        action: "env.unreadable",
        session: Some(session),
        names: Some(names.join(",")),
        detail: Some(reasons.join("; ")),
        ..Default::default()
    };
    let mut tx = state.db.begin_write().await?;
    audit::append(&mut tx, &actor, client, entry).await?;
    tx.commit().await?;
    Ok(())
}

async fn list_env(State(state): State<AppState>, principal: Principal) -> WebResult<Json<Value>> {
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

async fn target(state: &AppState, principal: &Principal, at: &Placement) -> WebResult<Target> {
    match (
        at.scope.as_deref().unwrap_or("global"),
        at.session_id.as_deref(),
    ) {
        ("global", None) => Ok(Target::Global),
        ("global", Some(_)) => Err(WebError::invalid(
            "unexpected_session_id",
            "`session_id` goes with `scope: session` only",
        )),
        ("session", Some(id)) => {
            let session = access::authorize(state, principal.into(), id, Need::WriteEnv).await?;
            Ok(Target::Session(session.id))
        }
        ("session", None) => Err(WebError::invalid(
            "session_id_required",
            "`scope: session` needs the `session_id` the value is for",
        )),
        _ => Err(WebError::invalid(
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
) -> WebResult<StatusCode> {
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
    widgetd_domain::secrets::audit_env(&mut tx, "env.set", user, &client, &target, &name).await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn delete_env_var(
    State(state): State<AppState>,
    principal: Principal,
    client: ClientAddr,
    Path(name): Path<String>,
    RawQuery(query): RawQuery,
) -> WebResult<StatusCode> {
    let user = principal.user_with_scope(TokenScope::EnvWrite)?;
    let placement: Placement = parse_query(query.as_deref())?;
    let name = EnvVarName::parse(&name)?;
    let target = target(&state, &principal, &placement).await?;
    let mut tx = state.db.begin_write().await?;
    delete_value(&mut tx, user, &target, &name).await?;
    widgetd_domain::secrets::audit_env(&mut tx, "env.delete", user, &client, &target, &name)
        .await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}
