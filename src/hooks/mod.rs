//! Claude Code's `http` hooks: `POST /api/v1/sessions/{id}/hooks/claude-code`
//! takes the hook input Claude Code sends and answers with the hook output
//! that event expects. A permission check becomes an approval widget the
//! person decides in the browser; notifications and the end of a turn become
//! transcript lines.

mod output;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::Value;

use self::output::{Event, Verdict};
use crate::AppState;
use crate::access::{self, Need};
use crate::api::{parse_json, parse_query};
use crate::audit::{Actor, ClientAddr};
use crate::auth::Principal;
use crate::error::{AppError, AppResult};
use crate::sessions::Session;
use crate::transcript::{self, Role};
use crate::widgets::approval::{self, ApprovalParams, RequestApprovalInput};
use crate::widgets::{self, Approval, Cause, WidgetStatus, check_wait};

pub fn router() -> Router<AppState> {
    Router::new().route(
        "/api/v1/sessions/{id}/hooks/claude-code",
        post(answer_claude_code_hook),
    )
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
}

/// `POST /api/v1/sessions/{id}/hooks/claude-code?wait=SECONDS` (the
/// session's agent token, or its host).
async fn answer_claude_code_hook(
    State(state): State<AppState>,
    principal: Principal,
    client: ClientAddr,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> AppResult<Json<Value>> {
    let session = access::authorize(&state, (&principal).into(), &id, Need::Act).await?;
    let wait = check_wait(parse_query::<WaitQuery>(query.as_deref())?.wait)?;
    let input: HookInput = parse_json(&body)?;
    let event = Event::parse(&input.hook_event_name)?;
    let actor = match principal {
        Principal::Agent { session_id } => Actor::Agent(session_id),
        Principal::User { user_id, .. } => Actor::User(user_id),
    };
    let cause = Cause {
        actor: &actor,
        client: &client,
    };
    match event {
        Event::PreToolUse | Event::PermissionRequest => {
            let params = tool_call(&input, wait)?;
            let verdict = decide(&state, &session, params, wait, cause).await?;
            Ok(Json(event.answer(&verdict, wait)))
        }
        Event::Notification => {
            let text = input
                .message
                .as_deref()
                .unwrap_or("Claude Code needs your attention.");
            let text = format!("Claude Code: {}", text.trim());
            transcript::add_message(&state, &session.id, Role::System, &text).await?;
            Ok(Json(serde_json::json!({})))
        }
        Event::Stop => {
            let text = "Claude Code finished its turn.";
            transcript::add_message(&state, &session.id, Role::System, text).await?;
            Ok(Json(serde_json::json!({})))
        }
    }
}

/// The tool call as an approval request; validated like `request_approval`.
fn tool_call(input: &HookInput, wait: u64) -> AppResult<ApprovalParams> {
    let (Some(tool), Some(tool_input)) = (&input.tool_name, &input.tool_input) else {
        return Err(AppError::BadRequest {
            code: "invalid_body",
            message: format!(
                "`{}` needs `tool_name` and `tool_input`",
                input.hook_event_name
            ),
        });
    };
    ApprovalParams::parse(&RequestApprovalInput {
        tool: tool.clone(),
        input: tool_input.clone(),
        reason: None,
        wait_seconds: Some(wait),
    })
}

/// A standing "Always" rule answers at once, without a widget; otherwise
/// the person decides, within `wait` seconds.
async fn decide(
    state: &AppState,
    session: &Session,
    params: ApprovalParams,
    wait: u64,
    cause: Cause<'_>,
) -> AppResult<Verdict> {
    let mut conn = state.db.read.acquire().await?;
    if approval::matching_rule(&mut conn, &session.creator_id, &params)
        .await?
        .is_some()
    {
        return Ok(Verdict::AlwaysAllowed);
    }
    drop(conn);
    let created = widgets::create::<Approval>(state, &session.id, params, cause).await?;
    if created.status != WidgetStatus::Pending || wait == 0 {
        return Ok(Verdict::from_result(created.status, None));
    }
    let view = widgets::wait_for_answer(state, &created.widget_id, wait).await?;
    Ok(Verdict::from_result(view.status, view.result.as_ref()))
}
