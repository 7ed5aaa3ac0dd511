//! The widget engine: durable, non-blocking requests for input.
//!
//! A widget is born `pending` (or terminal `already_present`) and leaves
//! `pending` exactly once, in one transaction that also writes everything
//! the transition implies: stored values (submit), the resume prompt, the
//! event and the audit row. The guarded `UPDATE … WHERE status = 'pending'`
//! is the only way out, so concurrent answers cannot both win and a crash
//! leaves either the old state or the whole new one.

pub mod api;
pub mod approval;
mod ask;
pub mod delivery;
mod env_vars;
mod store;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::AnyConnection;
use tracing::instrument;

pub use crate::ids::WidgetId;
pub use ask::{
    ASK, ASK_USER, AskInput, AskOption, AskParams, AskUserInput, Question, SimpleKind, check_wait,
};
pub use delivery::{Answered, Waited};
pub use env_vars::{
    EnvVarsParams, RequestEnvVarsInput, ScopeChoice, Submission, SubmissionJson, USE_SAVED_FIELD,
    VALUE_FIELD, VariableMeta,
};
pub use store::WidgetRow;

use crate::access::{self, Caller, Need};
use crate::audit::{self, Actor, ClientAddr, Entry};
use crate::error::{AppError, AppResult};
use crate::ids::{SessionId, UserId};
use crate::secrets::{self, Target};
use crate::sessions::{self, Session};
use crate::{AppState, clock, events, prompts};

/// The kind name of the env var widget.
pub const ENV_VARS: &str = "env_vars";

/// Where a widget is in its life. Every state but `pending` is terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WidgetStatus {
    Pending,
    Submitted,
    Dismissed,
    Expired,
    Cancelled,
    AlreadyPresent,
}

crate::db::text_enum!(WidgetStatus {
    Pending => "pending",
    Submitted => "submitted",
    Dismissed => "dismissed",
    Expired => "expired",
    Cancelled => "cancelled",
    AlreadyPresent => "already_present",
});

impl WidgetStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Submitted => "submitted",
            Self::Dismissed => "dismissed",
            Self::Expired => "expired",
            Self::Cancelled => "cancelled",
            Self::AlreadyPresent => "already_present",
        }
    }
}

/// The parameters of a widget of any kind this version knows.
#[derive(Debug, Clone)]
pub enum Params {
    EnvVars(EnvVarsParams),
    Ask(AskParams),
    Approval(approval::ApprovalParams),
    /// A kind this version does not know (written by a newer one), or
    /// parameters it cannot read: it can still expire or be cancelled.
    Unknown,
}

impl Params {
    /// Env var names, comma-joined, for the audit log.
    fn audit_names(&self) -> Option<String> {
        match self {
            Self::EnvVars(p) => Some(p.name_strs().join(",")),
            Self::Ask(_) | Self::Approval(_) | Self::Unknown => None,
        }
    }

    /// The resume prompt once the widget reached `to` with `result`.
    fn prompt(&self, tag: &str, to: WidgetStatus, result: &Value) -> String {
        match self {
            Self::EnvVars(p) => {
                prompts::env_vars_prompt(tag, to, &p.name_strs(), result["scope"].as_str())
            }
            Self::Ask(_) => prompts::ask_prompt(tag, to, &result["answers"]),
            Self::Approval(p) => prompts::approval_prompt(tag, to, &p.tool, result),
            Self::Unknown => prompts::lapse_prompt(tag, to),
        }
    }

    /// The result of a widget that ended without an answer.
    fn unanswered_result(&self) -> Value {
        match self {
            Self::EnvVars(p) => json!({ "names": p.names }),
            Self::Ask(_) | Self::Approval(_) | Self::Unknown => json!({}),
        }
    }
}

/// What a creating call returns: at once, never waiting for a person.
#[derive(Debug, Serialize)]
pub struct Created {
    pub widget_id: WidgetId,
    pub status: WidgetStatus,
}

/// A widget as anyone who may read the session sees it: parameters and
/// sanitized result, never a value.
#[derive(Debug, Serialize)]
pub struct WidgetView {
    pub widget_id: WidgetId,
    pub session_id: SessionId,
    pub kind: String,
    pub status: WidgetStatus,
    pub params: Value,
    pub result: Option<Value>,
    pub created_at: String,
    pub expires_at: String,
    pub resolved_at: Option<String>,
}

impl From<WidgetRow> for WidgetView {
    fn from(w: WidgetRow) -> Self {
        let parse = |text: &str| serde_json::from_str(text).unwrap_or(Value::Null);
        Self {
            params: parse(&w.params),
            result: w.result.as_deref().map(parse),
            widget_id: w.id,
            session_id: w.session_id,
            kind: w.kind,
            status: w.status,
            created_at: clock::rfc3339(w.created_at),
            expires_at: clock::rfc3339(w.expires_at),
            resolved_at: w.resolved_at.map(clock::rfc3339),
        }
    }
}

/// Who caused a transition, for the audit log.
pub struct Cause<'a> {
    pub actor: &'a Actor,
    pub client: &'a ClientAddr,
}

fn not_pending(status: WidgetStatus) -> AppError {
    AppError::WidgetNotPending(status)
}

/// The widget `id`, or 404.
pub async fn get_widget(conn: &mut AnyConnection, id: &WidgetId) -> AppResult<WidgetRow> {
    store::find(conn, id)
        .await?
        .ok_or(AppError::NotFound("widget"))
}

/// Every widget of a session, oldest first.
pub async fn session_widgets(
    conn: &mut AnyConnection,
    session: &SessionId,
) -> AppResult<Vec<WidgetRow>> {
    Ok(store::of_session(conn, session).await?)
}

/// The session if it is not archived; `409 session_archived` otherwise.
pub fn live(session: Session) -> AppResult<Session> {
    match session.archived_at {
        None => Ok(session),
        Some(_) => Err(AppError::Conflict {
            code: "session_archived",
            message: "the session is archived; start a new session".into(),
        }),
    }
}

/// A new widget row for `session`: pending, or born terminal with `result`.
fn new_row(
    state: &AppState,
    session: &Session,
    kind: &str,
    params: String,
    born: Option<(WidgetStatus, &Value)>,
) -> WidgetRow {
    let now = clock::now_ms();
    WidgetRow {
        id: WidgetId::generate(),
        session_id: session.id.clone(),
        kind: kind.to_owned(),
        params,
        status: born.map_or(WidgetStatus::Pending, |(status, _)| status),
        result: born.map(|(_, result)| result.to_string()),
        created_at: now,
        expires_at: now + state.settings.widget_ttl_ms,
        resolved_at: born.map(|_| now),
        resolved_by: None,
    }
}

/// Most widgets one session may have waiting at once.
pub const MAX_PENDING_PER_SESSION: i64 = 50;

/// `409 too_many_pending` when the session already has the most widgets
/// waiting that a person can be asked to face.
async fn check_pending_cap(tx: &mut AnyConnection, session: &SessionId) -> AppResult<()> {
    let pending: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM widgets WHERE session_id = $1 AND status = 'pending'",
    )
    .bind(session)
    .fetch_one(&mut *tx)
    .await?;
    if pending >= MAX_PENDING_PER_SESSION {
        return Err(AppError::Conflict {
            code: "too_many_pending",
            message: format!(
                "this session already has {pending} requests waiting (the most is \
                 {MAX_PENDING_PER_SESSION}); end your turn and wait for answers"
            ),
        });
    }
    Ok(())
}

/// Writes a new widget with its transcript message, `widget:created` event
/// and audit row; a widget born terminal also gets its prompt at once.
async fn insert_widget(
    tx: &mut AnyConnection,
    state: &AppState,
    widget: &WidgetRow,
    params: &Params,
    cause: &Cause<'_>,
) -> AppResult<()> {
    if let Actor::Agent(session) = cause.actor {
        state.limit_agent(session)?;
    }
    if widget.status == WidgetStatus::Pending {
        check_pending_cap(tx, &widget.session_id).await?;
    }
    store::insert(tx, widget).await?;
    let mut created =
        json!({ "widget_id": widget.id, "kind": widget.kind, "status": widget.status });
    if let Params::EnvVars(p) = params {
        created["names"] = json!(p.names);
    }
    events::record(tx, &widget.session_id, "widget:created", &created).await?;
    let entry = Entry {
        action: "widget.create",
        session: Some(&widget.session_id),
        widget: Some(widget.id.as_str()),
        names: params.audit_names(),
        detail: Some(format!("kind={}", widget.kind)),
        ..Default::default()
    };
    audit::append(tx, cause.actor, cause.client, entry).await?;
    if widget.status == WidgetStatus::Pending {
        notify(
            tx,
            state,
            widget,
            params,
            "widget.created",
            WidgetStatus::Pending,
        )
        .await?;
    } else {
        let result: Value = widget.result.as_deref().map_or(Value::Null, |r| {
            serde_json::from_str(r).unwrap_or(Value::Null)
        });
        after_resolution(tx, state, widget, params, widget.status, &result, cause).await?;
    }
    Ok(())
}

/// Creates an `env_vars` widget in `session`. Returns within one
/// transaction; `already_present` when every name already resolves in the
/// session's effective env (its resume prompt is queued at once).
#[instrument(skip_all)]
pub async fn request_env_vars(
    state: &AppState,
    session_id: &SessionId,
    input: RequestEnvVarsInput,
    cause: Cause<'_>,
) -> AppResult<Created> {
    let params = EnvVarsParams::parse(input)?;
    let mut tx = state.db.begin_write().await?;
    let session = live(sessions::get_session(&mut tx, session_id).await?)?;
    let present = secrets::effective_names(&mut tx, &session.creator_id, &session.id).await?;
    let all_present = params.names.iter().all(|n| present.contains(n.as_str()));
    let result = json!({ "names": params.names });
    let born = all_present.then_some((WidgetStatus::AlreadyPresent, &result));
    let stored = serde_json::to_string(&params).expect("params serialize");
    let widget = new_row(state, &session, ENV_VARS, stored, born);
    insert_widget(&mut tx, state, &widget, &Params::EnvVars(params), &cause).await?;
    tx.commit().await?;
    state.hub.publish(&session.id);
    Ok(Created {
        widget_id: widget.id,
        status: widget.status,
    })
}

/// Creates a question widget (`ask_user`, or a simple `ask` widget).
#[instrument(skip_all)]
pub async fn request_question(
    state: &AppState,
    session_id: &SessionId,
    kind: &'static str,
    params: AskParams,
    cause: Cause<'_>,
) -> AppResult<Created> {
    let mut tx = state.db.begin_write().await?;
    let session = live(sessions::get_session(&mut tx, session_id).await?)?;
    let stored = serde_json::to_string(&params).expect("params serialize");
    let widget = new_row(state, &session, kind, stored, None);
    insert_widget(&mut tx, state, &widget, &Params::Ask(params), &cause).await?;
    tx.commit().await?;
    state.hub.publish(&session.id);
    Ok(Created {
        widget_id: widget.id,
        status: widget.status,
    })
}

/// A person answers a question widget; the answers go back to the agent in
/// the resume prompt.
#[instrument(skip_all)]
pub async fn submit_answers(
    state: &AppState,
    id: &WidgetId,
    user: &UserId,
    fields: &[(String, String)],
    client: &ClientAddr,
) -> AppResult<WidgetView> {
    let mut tx = state.db.begin_write().await?;
    let (widget, session, any) = answerable(&mut tx, id, user).await?;
    let Params::Ask(params) = &any else {
        return Err(wrong_kind(&widget));
    };
    let answers = params.answers(fields)?;
    let typed = typed_texts(fields, "other.");
    secrets::refuse_stored_values(&mut tx, &state.keyring, &session.creator_id, &typed).await?;
    let by = store::user_name(&mut tx, user).await?;
    let result = AskParams::result(&answers, &by);
    let answer = Answer {
        to: WidgetStatus::Submitted,
        result,
        user,
        client,
    };
    finish(tx, state, &widget, &any, answer).await
}

/// The free-text fields of a form (those named `prefix…`): what a person
/// typed for the agent to read.
fn typed_texts<'a>(fields: &'a [(String, String)], prefix: &str) -> Vec<&'a str> {
    fields
        .iter()
        .filter(|(k, _)| k.starts_with(prefix))
        .map(|(_, v)| v.as_str())
        .collect()
}

/// A person's answer to a widget, as recorded.
struct Answer<'a> {
    to: WidgetStatus,
    result: Value,
    user: &'a UserId,
    client: &'a ClientAddr,
}

/// Ends an answer's transaction: the guarded transition with its prompt,
/// event and audit row, then the commit and the wake-up.
async fn finish(
    mut tx: crate::db::WriteTx,
    state: &AppState,
    widget: &WidgetRow,
    params: &Params,
    answer: Answer<'_>,
) -> AppResult<WidgetView> {
    let actor = Actor::User(answer.user.clone());
    let cause = Cause {
        actor: &actor,
        client: answer.client,
    };
    transition(
        &mut tx,
        state,
        widget,
        params,
        answer.to,
        &answer.result,
        Some(answer.user),
        &cause,
    )
    .await?;
    let view = get_widget(&mut tx, &widget.id).await?.into();
    tx.commit().await?;
    state.hub.publish(&widget.session_id);
    Ok(view)
}

/// Creates a question widget and, with `wait` seconds, waits for the
/// answer (see [`after_waiting`]).
pub async fn ask_and_wait(
    state: &AppState,
    session: &SessionId,
    kind: &'static str,
    params: AskParams,
    wait: u64,
    cause: Cause<'_>,
) -> AppResult<Waited> {
    let created = request_question(state, session, kind, params, cause).await?;
    after_waiting(state, created, wait).await
}

/// `{widget_id, status}` at once when `wait` is 0; otherwise waits up to
/// `wait` seconds and adds the `result` (and `answers` for questions), or
/// says plainly that nothing came in time and the answer will be a prompt.
/// The prompt of an answer handed back here stays queued until the caller
/// has the response (see [`delivery`]).
pub async fn after_waiting(state: &AppState, created: Created, wait: u64) -> AppResult<Waited> {
    if wait == 0 || created.status != WidgetStatus::Pending {
        let body = json!({ "widget_id": created.widget_id, "status": created.status });
        return Ok(Waited {
            body,
            answered: None,
        });
    }
    let view = wait_for_answer(state, &created.widget_id, wait).await?;
    if view.status == WidgetStatus::Pending {
        let body = json!({
            "widget_id": view.widget_id,
            "status": "pending",
            "message": format!("No answer within {wait} seconds. End your turn: the answer will arrive as a queued prompt."),
        });
        return Ok(Waited {
            body,
            answered: None,
        });
    }
    let result = view.result.clone().unwrap_or(Value::Null);
    let mut body = json!({ "widget_id": view.widget_id, "status": view.status, "result": result });
    if let Some(answers) = result.get("answers") {
        body["answers"] = answers.clone();
    }
    let answered = Answered {
        session: view.session_id.clone(),
        widget: view.widget_id.clone(),
    };
    Ok(Waited {
        body,
        answered: Some(answered),
    })
}

/// Creates an approval request; an identical request the creator approved
/// "always" is born approved.
#[instrument(skip_all)]
pub async fn request_approval(
    state: &AppState,
    session_id: &SessionId,
    params: approval::ApprovalParams,
    cause: Cause<'_>,
) -> AppResult<Created> {
    let mut tx = state.db.begin_write().await?;
    let session = live(sessions::get_session(&mut tx, session_id).await?)?;
    let rule = approval::matching_rule(&mut tx, &session.creator_id, &params).await?;
    let result = rule.as_ref().map(approval::MatchedRule::result);
    let born = result.as_ref().map(|r| (WidgetStatus::AlreadyPresent, r));
    let stored = serde_json::to_string(&params).expect("params serialize");
    let widget = new_row(state, &session, approval::APPROVAL, stored, born);
    insert_widget(&mut tx, state, &widget, &Params::Approval(params), &cause).await?;
    tx.commit().await?;
    state.hub.publish(&session.id);
    Ok(Created {
        widget_id: widget.id,
        status: widget.status,
    })
}

/// A person decides an approval request: deny (with an optional reason),
/// once, or always (which keeps a rule for identical requests).
#[instrument(skip_all)]
pub async fn submit_decision(
    state: &AppState,
    id: &WidgetId,
    user: &UserId,
    fields: &[(String, String)],
    client: &ClientAddr,
) -> AppResult<WidgetView> {
    let mut tx = state.db.begin_write().await?;
    let (widget, session, any) = answerable(&mut tx, id, user).await?;
    let Params::Approval(params) = &any else {
        return Err(wrong_kind(&widget));
    };
    let form = approval::parse_decision(fields)?;
    if let Some(pattern) = &form.pattern {
        params.check_pattern(pattern)?;
    }
    if let Some(reason) = &form.reason {
        secrets::refuse_stored_values(&mut tx, &state.keyring, &session.creator_id, &[reason])
            .await?;
    }
    let rule = match form.decision {
        approval::Decision::Always => {
            let pattern = form.pattern.as_deref();
            Some(approval::keep_rule(&mut tx, &session.creator_id, user, params, pattern).await?)
        }
        _ => None,
    };
    let by = store::user_name(&mut tx, user).await?;
    let result = approval::result(&form, &by, rule.as_deref());
    let answer = Answer {
        to: WidgetStatus::Submitted,
        result,
        user,
        client,
    };
    finish(tx, state, &widget, &any, answer).await
}

/// Waits up to `seconds` for `widget` to leave `pending`. Its prompt stays
/// queued: the caller acknowledges it once the answer reached its client
/// (see [`delivery`]).
pub async fn wait_for_answer(
    state: &AppState,
    widget: &WidgetId,
    seconds: u64,
) -> AppResult<WidgetView> {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(seconds);
    let mut listener = state.hub.subscribe();
    loop {
        let row = get_widget(&mut *state.db.read.acquire().await?, widget).await?;
        if row.status != WidgetStatus::Pending {
            return Ok(row.into());
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(row.into());
        }
        let session = row.session_id.clone();
        match tokio::time::timeout_at(deadline, listener.changed(&session)).await {
            Ok(true) | Err(_) => continue,
            Ok(false) => return Ok(row.into()),
        }
    }
}

/// Takes `widget` out of `pending` (the guarded update), then writes the
/// prompt, event and audit row. 409 with the current status if it was not
/// pending any more.
#[allow(clippy::too_many_arguments)]
async fn transition(
    tx: &mut AnyConnection,
    state: &AppState,
    widget: &WidgetRow,
    params: &Params,
    to: WidgetStatus,
    result: &Value,
    by: Option<&UserId>,
    cause: &Cause<'_>,
) -> AppResult<()> {
    if !store::resolve(tx, &widget.id, to, result, by, clock::now_ms()).await? {
        let current = get_widget(tx, &widget.id).await?.status;
        return Err(not_pending(current));
    }
    after_resolution(tx, state, widget, params, to, result, cause).await
}

async fn after_resolution(
    tx: &mut AnyConnection,
    state: &AppState,
    widget: &WidgetRow,
    params: &Params,
    to: WidgetStatus,
    result: &Value,
    cause: &Cause<'_>,
) -> AppResult<()> {
    let text = params.prompt(&state.settings.prompt_tag, to, result);
    prompts::queue(tx, &widget.session_id, &widget.id, &text).await?;
    let resolved = json!({ "widget_id": widget.id, "status": to, "result": result });
    events::record(tx, &widget.session_id, "widget:resolved", &resolved).await?;
    let action = match to {
        WidgetStatus::Submitted => "widget.submit",
        WidgetStatus::Dismissed => "widget.dismiss",
        WidgetStatus::Expired => "widget.expire",
        WidgetStatus::Cancelled => "widget.cancel",
        WidgetStatus::AlreadyPresent => "widget.already_present",
        WidgetStatus::Pending => unreachable!("a resolution leaves pending"),
    };
    let entry = Entry {
        action,
        session: Some(&widget.session_id),
        widget: Some(widget.id.as_str()),
        names: params.audit_names(),
        scope: result["scope"].as_str(),
        detail: result["decision"].as_str().map(|d| format!("decision={d}")),
    };
    audit::append(tx, cause.actor, cause.client, entry).await?;
    notify(tx, state, widget, params, "widget.resolved", to).await?;
    Ok(())
}

/// Queues the webhook notices of a change, in its transaction.
async fn notify(
    tx: &mut AnyConnection,
    state: &AppState,
    widget: &WidgetRow,
    params: &Params,
    event: &'static str,
    status: WidgetStatus,
) -> sqlx::Result<()> {
    let names = match params {
        Params::EnvVars(p) => Some(p.name_strs().iter().map(|n| n.to_string()).collect()),
        _ => None,
    };
    let notice = crate::webhooks::Notice {
        event,
        session: &widget.session_id,
        widget: widget.id.as_str(),
        kind: &widget.kind,
        status: status.as_str(),
        names,
    };
    crate::webhooks::enqueue(tx, &state.settings, &notice).await
}

fn wrong_kind(widget: &WidgetRow) -> AppError {
    AppError::invalid(
        "wrong_kind",
        format!("this answer does not fit a `{}` widget", widget.kind),
    )
}

/// The parameters a widget was created with.
fn stored_params(widget: &WidgetRow) -> AppResult<Params> {
    let unreadable = |e: serde_json::Error| {
        AppError::Internal(anyhow::anyhow!(
            "widget {} has unreadable params: {e}",
            widget.id
        ))
    };
    match widget.kind.as_str() {
        ENV_VARS => serde_json::from_str(&widget.params)
            .map(Params::EnvVars)
            .map_err(unreadable),
        ASK_USER | ASK => serde_json::from_str(&widget.params)
            .map(Params::Ask)
            .map_err(unreadable),
        approval::APPROVAL => serde_json::from_str(&widget.params)
            .map(Params::Approval)
            .map_err(unreadable),
        other => Err(AppError::Conflict {
            code: "unsupported_widget",
            message: format!("this version of widgetd cannot handle `{other}` widgets"),
        }),
    }
}

/// A pending widget of a session `user` may answer, with its session and
/// parameters, inside the caller's transaction.
async fn answerable(
    tx: &mut AnyConnection,
    id: &WidgetId,
    user: &UserId,
) -> AppResult<(WidgetRow, Session, Params)> {
    let widget = get_widget(tx, id).await?;
    let session = sessions::get_session(tx, &widget.session_id).await?;
    access::check(tx, Caller::Person(user), &session, Need::Answer)
        .await
        .map_err(|err| match err {
            AppError::NotFound(_) => AppError::NotFound("widget"),
            other => other,
        })?;
    if widget.status != WidgetStatus::Pending {
        return Err(not_pending(widget.status));
    }
    // Past its TTL but not swept yet: as good as expired.
    if widget.expires_at <= clock::now_ms() {
        return Err(not_pending(WidgetStatus::Expired));
    }
    let params = stored_params(&widget)?;
    Ok((widget, session, params))
}

/// A person answers an `env_vars` widget. Values go to the session
/// creator's store; the agent learns names and scope only.
#[instrument(skip_all)]
pub async fn submit_env_vars(
    state: &AppState,
    id: &WidgetId,
    user: &UserId,
    submission: Submission,
    client: &ClientAddr,
) -> AppResult<WidgetView> {
    let mut tx = state.db.begin_write().await?;
    let (widget, session, any) = answerable(&mut tx, id, user).await?;
    let Params::EnvVars(params) = &any else {
        return Err(wrong_kind(&widget));
    };
    submission.check_names(params)?;
    let submission = submission.with_meant_line_ends(params);
    for name in &submission.use_saved {
        if !secrets::has_global(&mut tx, &session.creator_id, name).await? {
            return Err(AppError::invalid(
                "no_saved_value",
                format!("there is no saved global value for {name}; type one"),
            ));
        }
    }
    // Reused values stay global whatever the form's scope said; when every
    // name was reused, the answer is a global one.
    let scope = match submission.values.is_empty() {
        true => ScopeChoice::Global,
        false => submission.scope.unwrap_or(params.default_scope),
    };
    let target = match scope {
        ScopeChoice::Global => Target::Global,
        ScopeChoice::Session => Target::Session(session.id.clone()),
    };
    let submitter = store::user_name(&mut tx, user).await?;
    let result =
        json!({ "names": params.names, "scope": scope.as_str(), "submitted_by": submitter });
    // The values are written in the same transaction as the transition.
    for (name, value) in &submission.values {
        secrets::set_value(
            &mut tx,
            &state.keyring,
            &session.creator_id,
            &target,
            name,
            value,
            user,
        )
        .await?;
        if target == Target::Global {
            // Otherwise an older session value would still win in this
            // session's env, while the prompt says the answer was given.
            secrets::delete_if_present(
                &mut tx,
                &session.creator_id,
                &Target::Session(session.id.clone()),
                name,
            )
            .await?;
        }
    }
    let answer = Answer {
        to: WidgetStatus::Submitted,
        result,
        user,
        client,
    };
    finish(tx, state, &widget, &any, answer).await
}

/// A person declines to answer.
pub async fn dismiss_widget(
    state: &AppState,
    id: &WidgetId,
    user: &UserId,
    client: &ClientAddr,
) -> AppResult<WidgetView> {
    let mut tx = state.db.begin_write().await?;
    let (widget, _, params) = answerable(&mut tx, id, user).await?;
    let by = store::user_name(&mut tx, user).await?;
    let mut result = params.unanswered_result();
    result["dismissed_by"] = json!(by);
    let answer = Answer {
        to: WidgetStatus::Dismissed,
        result,
        user,
        client,
    };
    finish(tx, state, &widget, &params, answer).await
}

/// Expires every pending widget whose TTL has passed. Returns how many.
pub async fn expire_due(state: &AppState) -> AppResult<usize> {
    let mut expired = 0;
    loop {
        let mut tx = state.db.begin_write().await?;
        let due = store::due(&mut tx, clock::now_ms(), 100).await?;
        if due.is_empty() {
            return Ok(expired);
        }
        let cause = Cause {
            actor: &Actor::System,
            client: &ClientAddr::default(),
        };
        let mut sessions = Vec::new();
        for widget in &due {
            let params = stored_params(widget).unwrap_or(Params::Unknown);
            let result = params.unanswered_result();
            transition(
                &mut tx,
                state,
                widget,
                &params,
                WidgetStatus::Expired,
                &result,
                None,
                &cause,
            )
            .await?;
            sessions.push(widget.session_id.clone());
        }
        tx.commit().await?;
        expired += due.len();
        sessions.dedup();
        sessions.iter().for_each(|s| state.hub.publish(s));
    }
}

/// Archives a session: its agent token stops working and its pending
/// widgets are cancelled, each with its prompt. Idempotent.
pub async fn archive_session(
    state: &AppState,
    session_id: &SessionId,
    cause: Cause<'_>,
) -> AppResult<usize> {
    let mut tx = state.db.begin_write().await?;
    sessions::mark_archived(&mut tx, session_id, clock::now_ms()).await?;
    let pending = store::pending_of_session(&mut tx, session_id).await?;
    for widget in &pending {
        let params = stored_params(widget).unwrap_or(Params::Unknown);
        let result = params.unanswered_result();
        transition(
            &mut tx,
            state,
            widget,
            &params,
            WidgetStatus::Cancelled,
            &result,
            None,
            &cause,
        )
        .await?;
    }
    let entry = Entry {
        action: "session.archive",
        session: Some(session_id),
        ..Default::default()
    };
    audit::append(&mut tx, cause.actor, cause.client, entry).await?;
    tx.commit().await?;
    state.hub.publish(session_id);
    Ok(pending.len())
}
