//! `/settings/webhooks`: a person's notification addresses and their
//! delivery log.

use askama::Template;
use askama_web::WebTemplate;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use secrecy::ExposeSecret;
use serde::Deserialize;

use crate::api::webhooks::audit_change;
use crate::state::AppState;
use crate::web::pages::{PageError, read_form, to_login};
use crate::web::{CurrentUser, check_csrf};
use widgetd_domain::Error;
use widgetd_domain::audit::ClientAddr;
use widgetd_domain::clock;
use widgetd_notify::webhooks::delivery::MAX_ATTEMPTS;
use widgetd_notify::webhooks::{create_endpoint, delete_endpoint, deliveries, list_endpoints};

type PageResult = Result<Response, PageError>;

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/settings/webhooks",
            get(view_settings_webhooks_get).post(add_webhook_form),
        )
        .route("/settings/webhooks/delete", post(delete_webhook_form))
}

struct EndpointRow {
    id: String,
    url: String,
    format: String,
    created_at: clock::Stamp,
}

struct DeliveryRow {
    msg_id: String,
    url: String,
    event: String,
    state: String,
    attempts: i64,
}

struct Created {
    url: String,
    secret: String,
}

#[derive(Template, WebTemplate)]
#[template(path = "settings_webhooks.html")]
struct WebhooksPage {
    user: String,
    csrf: String,
    is_admin: bool,
    endpoints: Vec<EndpointRow>,
    log: Vec<DeliveryRow>,
    created: Option<Created>,
    error: Option<(String, String)>,
    max_attempts: i64,
}

/// What became of a notice, in words: delivered or not, never what the
/// receiver answered.
fn state_of(d: &widgetd_notify::webhooks::Delivery) -> String {
    match (d.delivered_at, d.failed_at) {
        (Some(at), _) => format!("delivered {}", clock::readable(at)),
        (None, Some(_)) => "not delivered (given up)".to_owned(),
        (None, None) if d.attempts == 0 => "waiting to be sent".to_owned(),
        (None, None) => format!(
            "not delivered yet; next attempt {}",
            clock::readable(d.next_attempt_at)
        ),
    }
}

async fn page(
    state: &AppState,
    user: &CurrentUser,
    created: Option<Created>,
    error: Option<&Error>,
) -> PageResult {
    let mut conn = state.db.read.acquire().await?;
    let endpoints = list_endpoints(&mut conn, &user.id)
        .await?
        .into_iter()
        .map(|e| EndpointRow {
            id: e.id,
            url: e.url,
            format: e.format,
            created_at: clock::Stamp::from_ms(e.created_at),
        })
        .collect();
    let log = deliveries(&mut conn, &user.id, 20)
        .await?
        .iter()
        .map(|d| DeliveryRow {
            state: state_of(d),
            msg_id: d.msg_id.clone(),
            url: d.url.clone(),
            event: d.event.clone(),
            attempts: d.attempts,
        })
        .collect();
    let error = error.map(|e| {
        let (_, body) = crate::error::body_of(e);
        let text = |k: &str| body["error"][k].as_str().unwrap_or_default().to_owned();
        (text("code"), text("message"))
    });
    let page = WebhooksPage {
        user: user.name.clone(),
        csrf: user.csrf.clone(),
        is_admin: user.role == widgetd_domain::auth::Role::Admin,
        endpoints,
        log,
        created,
        error,
        max_attempts: MAX_ATTEMPTS,
    };
    Ok(page.into_response())
}

/// `GET /settings/webhooks`.
async fn view_settings_webhooks_get(
    State(state): State<AppState>,
    user: Option<CurrentUser>,
) -> PageResult {
    match user {
        Some(user) => page(&state, &user, None, None).await,
        None => Ok(to_login("/settings/webhooks")),
    }
}

#[derive(Deserialize)]
struct AddForm {
    #[serde(default)]
    csrf_token: Option<String>,
    #[serde(default)]
    url: String,
    #[serde(default)]
    format: String,
}

/// `POST /settings/webhooks`: the answer page shows the secret once (it is
/// not redirected, so a reload does not show it again).
async fn add_webhook_form(
    State(state): State<AppState>,
    user: CurrentUser,
    client: ClientAddr,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult {
    let form: AddForm = read_form(&body)?;
    check_csrf(&state, &headers, &user, form.csrf_token.as_deref())?;
    let allow_private = state.config.webhooks.allow_private;
    if let Err(err) =
        widgetd_notify::webhooks::address::check_destination(&form.url, allow_private).await
    {
        let response = page(&state, &user, None, Some(&err)).await?;
        return Ok((crate::error::status_of(err.class()), response).into_response());
    }
    let mut tx = state.db.begin_write().await?;
    match create_endpoint(&mut tx, &state.keyring, &user.id, &form.url, &form.format).await {
        Ok(new) => {
            audit_change(
                &mut tx,
                "webhook.create",
                &user.id,
                &client,
                &new.endpoint.id,
                &new.endpoint.url,
            )
            .await?;
            tx.commit().await?;
            let created = Created {
                url: new.endpoint.url,
                secret: new.secret.expose_secret().to_owned(),
            };
            page(&state, &user, Some(created), None).await
        }
        Err(err @ (Error::Invalid { .. } | Error::Conflict { .. })) => {
            drop(tx);
            let response = page(&state, &user, None, Some(&err)).await?;
            Ok((crate::error::status_of(err.class()), response).into_response())
        }
        Err(err) => Err(err.into()),
    }
}

#[derive(Deserialize)]
struct DeleteForm {
    #[serde(default)]
    csrf_token: Option<String>,
    #[serde(default)]
    id: String,
}

/// `POST /settings/webhooks/delete`: idempotent.
async fn delete_webhook_form(
    State(state): State<AppState>,
    user: CurrentUser,
    client: ClientAddr,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult {
    let form: DeleteForm = read_form(&body)?;
    check_csrf(&state, &headers, &user, form.csrf_token.as_deref())?;
    let mut tx = state.db.begin_write().await?;
    if delete_endpoint(&mut tx, &user.id, &form.id).await? {
        audit_change(&mut tx, "webhook.delete", &user.id, &client, &form.id, "").await?;
        tx.commit().await?;
    }
    Ok(Redirect::to("/settings/webhooks").into_response())
}
