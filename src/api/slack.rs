//! What Slack sends: button clicks (`POST /slack/interactions`, a form
//! with a `payload` JSON of type `block_actions`) and the slash command
//! (`POST /slack/commands`, `/widgetd link CODE`). Both are refused unless
//! Slack signed them with the connection's signing secret within the
//! replay window. A click answers as the linked widgetd user, through the
//! same checks and transition as the transcript; a refusal changes nothing.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::WebResult;
use crate::state::AppState;
use widgetd_domain::Error;
use widgetd_domain::audit::{self, Actor, ClientAddr, Entry};
use widgetd_domain::widgets::{self, AnswerBody, Answerer, WidgetId};
use widgetd_domain::{auth, clock};
use widgetd_notify::slack::blocks::{self, Choice};
use widgetd_notify::slack::verify::{self, Refused};
use widgetd_notify::slack::{Part, link_of_slack_user, open_part, redeem_code};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/slack/interactions", post(receive_interaction))
        .route("/slack/commands", post(receive_command))
}

fn not_connected() -> Error {
    Error::NotFound("Slack connection")
}

/// Checks Slack's signature on `body`; `401` otherwise, saying which
/// check failed but nothing of what was sent.
async fn verified(state: &AppState, headers: &HeaderMap, body: &[u8]) -> WebResult<()> {
    let secret = {
        let mut conn = state.db.read.acquire().await?;
        open_part(&mut conn, &state.keyring, Part::SigningSecret).await?
    };
    let secret = secret.ok_or_else(not_connected)?;
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let checked = verify::check(
        secret.expose_secret().as_bytes(),
        header("x-slack-request-timestamp"),
        header("x-slack-signature"),
        body,
        clock::now_ms() / 1000,
    );
    let (code, message) = match checked {
        Ok(()) => return Ok(()),
        Err(Refused::Malformed) => (
            "slack_signature_missing",
            "a Slack request needs X-Slack-Request-Timestamp and a v0 X-Slack-Signature",
        ),
        Err(Refused::Stale) => (
            "slack_request_stale",
            "the request's timestamp is more than five minutes from now",
        ),
        Err(Refused::BadSignature) => (
            "slack_signature_invalid",
            "the request is not signed with this deployment's Slack signing secret",
        ),
    };
    Err(Error::Unauthenticated {
        code,
        message: message.into(),
    }
    .into())
}

/// A Slack id (`T0123ABCD`, `U0123ABCD`): letters and digits only.
fn is_slack_id(id: &str) -> bool {
    (1..=32).contains(&id.len()) && id.chars().all(|c| c.is_ascii_alphanumeric())
}

fn bad_payload() -> Error {
    Error::BadRequest {
        code: "invalid_slack_payload",
        message: "not a Slack interaction this deployment sends".into(),
    }
}

/// The form fields of a Slack request body.
fn form_fields(body: &[u8]) -> WebResult<Vec<(String, String)>> {
    Ok(serde_urlencoded::from_bytes(body).map_err(|_| bad_payload())?)
}

/// The parts of a `block_actions` payload widgetd reads.
#[derive(Deserialize)]
struct Payload {
    #[serde(rename = "type")]
    kind: String,
    user: SlackUser,
    #[serde(default)]
    team: Option<Team>,
    #[serde(default)]
    actions: Vec<Action>,
}

#[derive(Deserialize)]
struct SlackUser {
    id: String,
    #[serde(default)]
    team_id: Option<String>,
}

#[derive(Deserialize)]
struct Team {
    id: String,
}

#[derive(Deserialize)]
struct Action {
    action_id: String,
    #[serde(default)]
    block_id: String,
    #[serde(default)]
    value: String,
}

/// `POST /slack/interactions`: a button of a widget's message.
async fn receive_interaction(
    State(state): State<AppState>,
    client: ClientAddr,
    headers: HeaderMap,
    body: Bytes,
) -> WebResult<Response> {
    verified(&state, &headers, &body).await?;
    let payload = form_fields(&body)?
        .into_iter()
        .find(|(k, _)| k == "payload")
        .ok_or_else(bad_payload)?
        .1;
    let payload: Payload = serde_json::from_str(&payload).map_err(|_| bad_payload())?;
    let [action] = payload.actions.as_slice() else {
        return Err(bad_payload().into());
    };
    if payload.kind != "block_actions" {
        return Err(bad_payload().into());
    }
    // The link button answers nothing; Slack still tells of the click.
    if action.action_id == blocks::OPEN_ACTION {
        return Ok(StatusCode::OK.into_response());
    }
    let team = payload
        .team
        .map(|t| t.id)
        .or(payload.user.team_id)
        .filter(|t| is_slack_id(t))
        .ok_or_else(bad_payload)?;
    let choice = blocks::read_choice(&action.action_id, &action.value).ok_or_else(bad_payload)?;
    let widget = blocks::widget_of_block(&action.block_id)
        .and_then(WidgetId::parse)
        .ok_or_else(bad_payload)?;
    let client = ClientAddr(Some(match client.0 {
        Some(addr) => format!("slack:{addr}"),
        None => "slack".to_owned(),
    }));
    answer(&state, &team, &payload.user.id, &widget, &choice, &client).await?;
    Ok(StatusCode::OK.into_response())
}

/// Answers `widget` as the widgetd user linked to `slack_user`, if that
/// person was sent its message and may answer it.
async fn answer(
    state: &AppState,
    team: &str,
    slack_user: &str,
    widget: &WidgetId,
    choice: &Choice,
    client: &ClientAddr,
) -> WebResult<()> {
    let (user, row) = {
        let mut conn = state.db.read.acquire().await?;
        let link = link_of_slack_user(&mut conn, team, slack_user)
            .await?
            .ok_or_else(|| {
                Error::Forbidden(
                    "this Slack user is not linked to a widgetd user; link it from widgetd's \
                     Slack settings"
                        .into(),
                )
            })?;
        let person = auth::find_user_by_id(&mut conn, &link.user_id).await?;
        if person.is_none_or(|p| p.disabled) {
            return Err(Error::Forbidden("this widgetd user is disabled".into()).into());
        }
        if !widgetd_notify::slack::was_sent(&mut conn, widget.as_str(), &link.user_id).await? {
            return Err(Error::NotFound("widget").into());
        }
        (link.user_id, widgets::get_widget(&mut conn, widget).await?)
    };
    let fields = blocks::answer_fields(&row, choice).ok_or_else(bad_payload)?;
    let fields = fields
        .into_iter()
        .map(|(k, v)| (k, SecretString::from(v)))
        .collect();
    let by = Answerer::Person(&user);
    widgets::submit(state, &row, by, AnswerBody::Form(fields), client).await?;
    Ok(())
}

/// `POST /slack/commands`: `/widgetd link CODE` links the Slack user who
/// sent it to the widgetd user who asked for the code. Slack shows the
/// answer's text to that user only.
async fn receive_command(
    State(state): State<AppState>,
    client: ClientAddr,
    headers: HeaderMap,
    body: Bytes,
) -> WebResult<Response> {
    verified(&state, &headers, &body).await?;
    let fields = form_fields(&body)?;
    let field = |name: &str| {
        fields
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    };
    let (team, slack_user) = (field("team_id"), field("user_id"));
    if !is_slack_id(team) || !is_slack_id(slack_user) {
        return Err(bad_payload().into());
    }
    let text = field("text").trim();
    let reply = match text.split_once(char::is_whitespace) {
        Some(("link", code)) => link(&state, &client, team, slack_user, code).await?,
        _ => "Link this Slack account: open widgetd's Slack settings, make a code, \
              and send `/widgetd link CODE` here."
            .to_owned(),
    };
    let answer = json!({ "response_type": "ephemeral", "text": reply });
    Ok(axum::Json::<Value>(answer).into_response())
}

async fn link(
    state: &AppState,
    client: &ClientAddr,
    team: &str,
    slack_user: &str,
    code: &str,
) -> WebResult<String> {
    let code = SecretString::from(code.trim().to_owned());
    let mut tx = state.db.begin_write().await?;
    let linked = redeem_code(&mut tx, &code, team, slack_user).await;
    let user = match linked {
        Ok(user) => user,
        Err(err @ (Error::Invalid { .. } | Error::Conflict { .. })) => {
            // The spent code stays spent.
            tx.commit().await?;
            return Ok(err.public_message());
        }
        Err(err) => return Err(err.into()),
    };
    let entry = Entry {
        action: "slack.link",
        detail: Some(format!("team={team}; slack_user={slack_user}")),
        ..Default::default()
    };
    // Named, so that a person who sent someone else's code sees whose
    // questions they will get.
    let name = auth::find_user_by_id(&mut tx, &user)
        .await?
        .map(|u| u.name)
        .unwrap_or_default();
    audit::append(&mut tx, &Actor::User(user), client, entry).await?;
    tx.commit().await?;
    Ok(format!(
        "Linked to the widgetd user {}: widgetd will ask you here.",
        blocks::escape(&name)
    ))
}
