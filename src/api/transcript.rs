//! The transcript's routes: the host's or agent's `POST
//! /api/v1/sessions/{id}/messages` and the browser's `POST
//! /sessions/{id}/reply`.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::ApiJson;
use crate::error::WebResult;
use crate::state::AppState;
use crate::web::pages::{self, read_form};
use crate::web::{CurrentUser, check_csrf};
use widgetd_domain::Error;
use widgetd_domain::access::{self, Need};
use widgetd_domain::audit::ClientAddr;
use widgetd_domain::auth::Principal;
use widgetd_domain::transcript::Role;
use widgetd_domain::transcript::add_message;
use widgetd_domain::transcript::reply::{ReplyText, post_reply};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/sessions/{id}/messages", post(post_message))
        .route("/sessions/{id}/reply", post(reply_form))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewMessage {
    #[serde(default)]
    role: Role,
    text: String,
}

/// `POST /api/v1/sessions/{id}/messages` (the session's host or agent).
async fn post_message(
    State(state): State<AppState>,
    principal: Principal,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<NewMessage>,
) -> WebResult<(StatusCode, Json<Value>)> {
    let session = access::authorize(&state, (&principal).into(), &id, Need::Act).await?;
    // The agent speaks for itself only: user and system lines come from the host.
    if matches!(principal, Principal::Agent { .. }) && !matches!(body.role, Role::Agent) {
        return Err(Error::Forbidden("agent tokens post `agent` messages only".into()).into());
    }
    if let Principal::Agent { session_id } = &principal {
        let mut tx = state.db.begin_write().await?;
        widgetd_domain::limits::take_agent(&mut tx, session_id).await?;
        tx.commit().await?;
    }
    let message_id = add_message(&state, &session.id, body.role, &body.text).await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({ "message_id": message_id })),
    ))
}

#[derive(Deserialize)]
struct ReplyForm {
    #[serde(default)]
    csrf_token: Option<String>,
    #[serde(default)]
    text: String,
}

/// `POST /sessions/{id}/reply` (urlencoded `text`, `csrf_token`): back to
/// the new message in the transcript, or the transcript with the reason
/// beside an empty reply box.
async fn reply_form(
    State(state): State<AppState>,
    user: CurrentUser,
    client: ClientAddr,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> WebResult<Response> {
    let form: ReplyForm = read_form(&body)?;
    check_csrf(&state, &headers, &user, form.csrf_token.as_deref())?;
    let written = async {
        let text = ReplyText::parse(&form.text)?;
        post_reply(&state, &id, (&user.id, &user.name), &text, &client).await
    };
    match written.await {
        Ok(reply) => {
            let to = format!("/sessions/{}#m-{}", reply.session, reply.message_id);
            Ok(Redirect::to(&to).into_response())
        }
        Err(err @ (Error::Invalid { .. } | Error::Conflict { .. })) => {
            Ok(pages::reply_refused(&state, &user, &id, err.into()).await)
        }
        Err(err) => Err(err.into()),
    }
}
