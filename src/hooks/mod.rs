//! Claude Code's `http` hooks: `POST /api/v1/sessions/{id}/hooks/claude-code`
//! takes the hook input Claude Code sends and answers with the hook output
//! that event expects. A permission check becomes an approval widget the
//! person decides in the browser (see `decide`); notifications and the end
//! of a turn become transcript lines, labelled as the agent's tool's.

mod decide;
mod output;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use self::output::Event;
use crate::api::widgets::respond::ack_when_sent;
use crate::error::{WebError, WebResult};
use crate::state::AppState;
use widgetd_domain::Error;
use widgetd_domain::access::{self, Need};
use widgetd_domain::audit::{Actor, ClientAddr};
use widgetd_domain::auth::Principal;
use widgetd_domain::input::{parse_json, parse_query};
use widgetd_domain::sessions::Session;
use widgetd_domain::transcript::{self, Role};
use widgetd_domain::widgets::check_wait;
use widgetd_domain::widgets::kinds::approval::{ApprovalParams, RequestApprovalInput};

pub fn router() -> Router<AppState> {
    Router::new().route(
        "/api/v1/sessions/{id}/hooks/claude-code",
        post(answer_claude_code_hook).get(check_claude_code_hook),
    )
}

/// `GET /api/v1/sessions/{id}/hooks/claude-code`: `{"session_id", "ready":
/// true}` when this token may use the session's hooks (and its MCP tools):
/// what `widgetd connect` and `widgetd host` check before they rely on a
/// session and a token.
async fn check_claude_code_hook(
    State(state): State<AppState>,
    principal: Principal,
    Path(id): Path<String>,
) -> WebResult<Json<Value>> {
    let session = access::authorize(&state, (&principal).into(), &id, Need::Act).await?;
    Ok(Json(json!({ "session_id": session.id, "ready": true })))
}

/// The fields of Claude Code's hook input that widgetd reads; the others
/// (`session_id`, `transcript_path`, `cwd`, `permission_mode`, …) are
/// ignored, as new ones will come.
#[derive(Deserialize)]
struct HookInput {
    hook_event_name: String,
    #[serde(default)]
    tool_name: Option<String>,
    #[serde(default)]
    tool_input: Option<Value>,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WaitQuery {
    #[serde(default)]
    wait: Option<u64>,
    /// `allow_edit=true`: the person may edit a tool call's input before
    /// allowing it; Claude Code then runs the edited input (`updatedInput`).
    #[serde(default)]
    allow_edit: bool,
}

/// `POST /api/v1/sessions/{id}/hooks/claude-code?wait=SECONDS` (the
/// session's agent token, or its host).
async fn answer_claude_code_hook(
    State(state): State<AppState>,
    principal: Result<Principal, WebError>,
    client: ClientAddr,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> WebResult<Response> {
    let principal = match principal {
        Ok(principal) => principal,
        Err(err) => return refused(err, &body),
    };
    let session = match access::authorize(&state, (&principal).into(), &id, Need::Act).await {
        Ok(session) => session,
        Err(err) => return refused(err.into(), &body),
    };
    let query = parse_query::<WaitQuery>(query.as_deref())?;
    let wait = check_wait(query.wait)?;
    let input: HookInput = parse_json(&body)?;
    let event = Event::parse(&input.hook_event_name)?;
    let actor = match &principal {
        Principal::Agent { session_id } => Actor::Agent(session_id.clone()),
        Principal::User { user_id, .. } => Actor::User(user_id.clone()),
    };
    match event {
        Event::PreToolUse | Event::PermissionRequest => {
            let params = tool_call(&input, wait, query.allow_edit)?;
            let decided =
                decide::decide(&state.core, &session, params, wait, &actor, &client).await?;
            let response = Json(event.answer(&decided.verdict, wait)).into_response();
            Ok(match decided.answered {
                // Delivered here: the prompt is not handed out again.
                Some(answered) => ack_when_sent(state.core.clone(), response, answered),
                None => response,
            })
        }
        Event::Notification => {
            let text = input
                .message
                .as_deref()
                .unwrap_or("Claude Code needs your attention.");
            let text = format!("Claude Code notification: {}", text.trim());
            tool_line(&state, &principal, &session, &text).await?;
            Ok(Json(json!({})).into_response())
        }
        Event::Stop => {
            let text = "Claude Code finished its turn.";
            tool_line(&state, &principal, &session, text).await?;
            Ok(Json(json!({})).into_response())
        }
    }
}

/// A hook call not tied to a session. A permission check must not fail
/// quietly (Claude Code takes an HTTP error from a hook as "go on", and
/// nobody would be asked): it gets a loud answer; anything else the error.
fn refused(err: WebError, body: &[u8]) -> WebResult<Response> {
    match permission_event(body) {
        Some(event) => Ok(Json(event.unmatched(unmatched_why(&err))).into_response()),
        None => Err(err),
    }
}

/// The permission event a body names, read leniently: whether a refusal
/// must be answered loudly.
fn permission_event(body: &[u8]) -> Option<Event> {
    let name = serde_json::from_slice::<Value>(body).ok()?["hook_event_name"]
        .as_str()
        .and_then(|name| Event::parse(name).ok())?;
    matches!(name, Event::PreToolUse | Event::PermissionRequest).then_some(name)
}

/// Why a hook call was not tied to a session, in words that say what to
/// check; fixed texts, nothing of the request.
fn unmatched_why(err: &WebError) -> &'static str {
    match err.domain() {
        Some(Error::Unauthenticated { .. }) => {
            "the hook's bearer token is missing, unknown or revoked (is WIDGETD_AGENT_TOKEN set \
             in Claude Code's environment, to the session's current agent token?)."
        }
        Some(Error::NotFound(_)) => {
            "the hook's URL names a session that this agent token does not belong to."
        }
        _ => "this token may not use this session's hooks.",
    }
}

/// A line from the agent's tool in the transcript. From the agent token it
/// is the agent's line, limited like the agent's `/messages`: the agent
/// controls what its tool says, so it never reads as widgetd's own.
async fn tool_line(
    state: &AppState,
    principal: &Principal,
    session: &Session,
    text: &str,
) -> WebResult<()> {
    let role = match principal {
        Principal::Agent { session_id } => {
            let mut tx = state.db.begin_write().await?;
            widgetd_domain::limits::take_agent(&mut tx, session_id).await?;
            tx.commit().await?;
            Role::Agent
        }
        Principal::User { .. } => Role::System,
    };
    transcript::add_message(state, &session.id, role, text).await?;
    Ok(())
}

/// The tool call as an approval request; validated like `request_approval`.
fn tool_call(input: &HookInput, wait: u64, allow_edit: bool) -> WebResult<ApprovalParams> {
    let (Some(tool), Some(tool_input)) = (&input.tool_name, &input.tool_input) else {
        return Err(Error::BadRequest {
            code: "invalid_body",
            message: format!(
                "`{}` needs `tool_name` and `tool_input`",
                input.hook_event_name
            ),
        }
        .into());
    };
    Ok(ApprovalParams::parse(&RequestApprovalInput {
        tool: tool.clone(),
        input: tool_input.clone(),
        reason: None,
        wait_seconds: Some(wait),
        allow_edit,
        approvers: None,
    })?)
}
