//! Webhooks over the REST API, for API tokens with the `sessions` scope.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{delete, get};
use axum::{Json, Router};
use secrecy::ExposeSecret;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::ApiJson;
use crate::error::WebResult;
use crate::state::AppState;
use widgetd_domain::audit::{self, Actor, ClientAddr, Entry};
use widgetd_domain::auth::Principal;
use widgetd_domain::auth::tokens::TokenScope;
use widgetd_domain::ids::UserId;
use widgetd_notify::webhooks::{create_endpoint, delete_endpoint, deliveries, list_endpoints};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/webhooks", get(list_webhooks).post(create_webhook))
        .route("/api/v1/webhooks/{id}", delete(delete_webhook))
        .route("/api/v1/webhooks/deliveries", get(list_deliveries))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    url: String,
    #[serde(default)]
    format: Option<String>,
}

async fn list_webhooks(
    State(state): State<AppState>,
    principal: Principal,
) -> WebResult<Json<Value>> {
    let user = principal.user_with_scope(TokenScope::Sessions)?;
    let mut conn = state.db.read.acquire().await?;
    Ok(Json(
        json!({ "webhooks": list_endpoints(&mut conn, user).await? }),
    ))
}

/// `POST /api/v1/webhooks`: the answer carries the signing secret, once.
async fn create_webhook(
    State(state): State<AppState>,
    principal: Principal,
    client: ClientAddr,
    ApiJson(body): ApiJson<CreateBody>,
) -> WebResult<(StatusCode, Json<Value>)> {
    let user = principal.user_with_scope(TokenScope::Sessions)?;
    let format = body.format.unwrap_or_default();
    let allow_private = state.config.webhooks.allow_private;
    widgetd_notify::webhooks::address::check_destination(&body.url, allow_private).await?;
    let mut tx = state.db.begin_write().await?;
    let created = create_endpoint(&mut tx, &state.keyring, user, &body.url, &format).await?;
    audit_change(
        &mut tx,
        "webhook.create",
        user,
        &client,
        &created.endpoint.id,
        &created.endpoint.url,
    )
    .await?;
    tx.commit().await?;
    let mut answer = serde_json::to_value(&created.endpoint).map_err(anyhow::Error::from)?;
    answer["secret"] = json!(created.secret.expose_secret());
    Ok((StatusCode::CREATED, Json(answer)))
}

/// `DELETE /api/v1/webhooks/{id}`: idempotent; another user's id is
/// treated as one that does not exist.
async fn delete_webhook(
    State(state): State<AppState>,
    principal: Principal,
    client: ClientAddr,
    Path(id): Path<String>,
) -> WebResult<StatusCode> {
    let user = principal.user_with_scope(TokenScope::Sessions)?;
    let mut tx = state.db.begin_write().await?;
    if delete_endpoint(&mut tx, user, &id).await? {
        audit_change(&mut tx, "webhook.delete", user, &client, &id, "").await?;
        tx.commit().await?;
    }
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /api/v1/webhooks/deliveries`: the 50 most recent notices.
async fn list_deliveries(
    State(state): State<AppState>,
    principal: Principal,
) -> WebResult<Json<Value>> {
    let user = principal.user_with_scope(TokenScope::Sessions)?;
    let mut conn = state.db.read.acquire().await?;
    let rows: Vec<Value> = deliveries(&mut conn, user, 50)
        .await?
        .iter()
        .map(|d| {
            let mut row = json!(d);
            row["state"] = json!(d.state());
            row
        })
        .collect();
    Ok(Json(json!({ "deliveries": rows })))
}

/// A `webhook.create` / `webhook.delete` row: the endpoint and the host it
/// points at (a Slack URL's path is itself a credential, so not the URL).
pub(crate) async fn audit_change(
    tx: &mut widgetd_domain::db::WriteTx,
    action: &'static str,
    user: &UserId,
    client: &ClientAddr,
    id: &str,
    url: &str,
) -> sqlx::Result<()> {
    let host = url
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split(['/', '?', '#']).next())
        .unwrap_or_default();
    let detail = match host {
        "" => format!("webhook={id}"),
        host => format!("webhook={id}; host={host}"),
    };
    let entry = Entry {
        action,
        detail: Some(detail),
        ..Default::default()
    };
    audit::append(tx, &Actor::User(user.clone()), client, entry).await
}
