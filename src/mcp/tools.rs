//! The tools an agent sees. Each call reads who is calling from the HTTP
//! request the `/mcp` middleware authenticated, runs the same domain
//! function as the REST API, and answers a refusal as a tool error carrying
//! the REST API's stable error code.

use axum::http::request::Parts;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::{InputResponses as Responses, RequestState};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, ElicitRequest, InputRequest, InputRequests,
    InputRequiredResult, InputResponses, JsonObject, ProtocolVersion,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::inflight::CallKey;
use super::offers::Offers;
use super::{AgentSession, Elicitation, elicit};
use crate::AppState;
use crate::access::{self, Caller, Need};
use crate::api::parse_value;
use crate::audit::Actor;
use crate::error::{AppError, AppResult};
use crate::sessions;
use crate::widgets::{
    self, Approval, Ask, AskUser, Cause, Clarification, EnvVars, Request, WidgetId, WidgetStatus,
    WidgetView,
};

/// The MCP server: one per request (stateless), sharing the app state and
/// the tool router (built once, see [`router`]).
#[derive(Clone)]
pub(super) struct AgentTools {
    pub(super) state: AppState,
    /// What this daemon's 2026-07-28 calls offered (see [`super::offers`]).
    pub(super) offers: Offers,
}

/// The arguments of `get_widget_status`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WidgetStatusInput {
    /// The `widget_id` that `request_env_vars` returned.
    widget_id: String,
}

impl AgentTools {
    pub(super) fn new(state: AppState) -> Self {
        Self {
            state,
            offers: Offers::default(),
        }
    }

    /// Every widget tool: the arguments parsed and validated as the REST
    /// twin's body, the widget created in the caller's session, then either
    /// one elicitation for the agent's client to show (see [`elicit`]) or
    /// the answer waited for when `wait_seconds` asks for it. A retry that
    /// echoes a `requestState` continues the widget it names instead.
    async fn create<R: Request>(
        &self,
        ctx: &RequestContext<RoleServer>,
        args: JsonObject,
        retry: Retry,
    ) -> AppResult<Reply> {
        let mut args = args;
        let life = widgets::life::split(&mut args, self.state.settings.widget_ttl_ms)?;
        R::normalise(&mut args);
        let (params, wait) = widgets::validate::<R>(parse_args(args)?)?;
        if let Some(handle) = retry.state {
            return Ok(Reply::Done(
                self.resume::<R>(ctx, &handle, retry.responses, wait)
                    .await?,
            ));
        }
        let agent = caller(ctx)?;
        let actor = Actor::Agent(agent.session_id.clone());
        let cause = Cause {
            actor: &actor,
            client: &agent.client,
        };
        let session = &agent.session_id;
        let created =
            widgets::create_living::<R>(&self.state, session, params, &life, cause).await?;
        let request = match created.status {
            WidgetStatus::Pending => self.elicitation(ctx, &created.widget_id).await?,
            _ => None,
        };
        if let Some(request) = request {
            if !modern(ctx) {
                return Ok(Reply::Done(
                    self.ask_in_session(ctx, created, request, wait).await?,
                ));
            }
            let mut requests = InputRequests::new();
            requests.insert(
                elicit::INPUT_KEY.to_owned(),
                InputRequest::Elicitation(ElicitRequest::new(request)),
            );
            // Not the widget's id: a state only this call's retry can show.
            let handle = self
                .offers
                .offer(&agent.session_id, R::NAME, &created.widget_id);
            return Ok(Reply::Input(InputRequiredResult::new(
                Some(requests),
                Some(handle),
            )));
        }
        Ok(Reply::Done(self.wait(ctx, created, wait).await?))
    }

    /// The modes this call may use: the daemon's and the session's setting,
    /// and what the client declares, in a 2026-07-28 request or in the
    /// `initialize` of its MCP session. A client of an older protocol
    /// without an MCP session gets none: there is no way to send it a
    /// request (see `super::sessions`).
    pub(super) async fn modes(&self, ctx: &RequestContext<RoleServer>) -> AppResult<Elicitation> {
        let reachable = modern(ctx) || caller(ctx)?.in_session;
        let declared = match ctx.client_capabilities().and_then(|c| c.elicitation) {
            Some(e) if reachable => Elicitation::from_flags(
                e.url.is_some(),
                // An empty `elicitation: {}` declares form mode (2025-11-25).
                e.form.is_some() || e.url.is_none(),
            ),
            _ => Elicitation::Off,
        };
        if declared == Elicitation::Off {
            return Ok(declared);
        }
        let agent = caller(ctx)?;
        let session =
            sessions::elicitation(&mut *self.state.db.read.acquire().await?, &agent.session_id)
                .await?;
        Ok(declared.and(session).and(self.state.settings.elicitation))
    }

    /// The elicitation for a new pending widget, if this call may use one:
    /// URL mode for env vars, form mode for questions.
    async fn elicitation(
        &self,
        ctx: &RequestContext<RoleServer>,
        id: &WidgetId,
    ) -> AppResult<Option<rmcp::model::ElicitRequestParams>> {
        let modes = self.modes(ctx).await?;
        if modes == Elicitation::Off {
            return Ok(None);
        }
        let row = widgets::get_widget(&mut *self.state.db.read.acquire().await?, id).await?;
        Ok(match row.kind.as_str() {
            EnvVars::NAME if modes.url() => {
                elicit::url_request(&self.state.settings.public_url, &row)
            }
            EnvVars::NAME => None,
            _ if modes.form() => elicit::form_request(&row),
            _ => None,
        })
    }

    /// Waits for the answer unless the caller goes away first: rmcp keeps
    /// running a handler whose client disconnected and only cancels its
    /// token, and a client that gives up sends `notifications/cancelled`.
    /// An answer handed back here is acknowledged only once the response
    /// has gone out whole (see `super::inflight`); until then its prompt
    /// stays queued for the agent host.
    pub(super) async fn wait(
        &self,
        ctx: &RequestContext<RoleServer>,
        created: widgets::Created,
        wait: u64,
    ) -> AppResult<Value> {
        let agent = caller(ctx)?;
        let key = CallKey::new(
            &agent.session_id,
            &serde_json::to_value(&ctx.id).map_err(anyhow::Error::from)?,
        );
        let cancelled = agent.inflight.token(&key).unwrap_or_default();
        let waited = tokio::select! {
            waited = widgets::after_waiting(&self.state, created, wait) => waited?,
            () = ctx.ct.cancelled() => return Err(gone()),
            () = cancelled.cancelled() => return Err(gone()),
        };
        if let Some(answered) = waited.answered {
            agent.inflight.answered(&key, answered);
        }
        Ok(waited.body)
    }

    async fn widget_status(
        &self,
        ctx: &RequestContext<RoleServer>,
        widget_id: &str,
    ) -> AppResult<Value> {
        let agent = caller(ctx)?;
        let id = WidgetId::parse(widget_id).ok_or(AppError::NotFound("widget"))?;
        let widget = widgets::get_widget(&mut *self.state.db.read.acquire().await?, &id).await?;
        // Another session's widget is reported missing, not forbidden, so an
        // agent cannot learn which ids exist elsewhere.
        let caller = Caller::Agent(&agent.session_id);
        access::authorize(&self.state, caller, widget.session_id.as_str(), Need::Watch)
            .await
            .map_err(|_| AppError::NotFound("widget"))?;
        let view = WidgetView::from(widget);
        Ok(serde_json::to_value(view).map_err(anyhow::Error::from)?)
    }
}

#[tool_router]
impl AgentTools {
    /// Ask the user for environment variables you need (API keys, tokens,
    /// other credentials or settings). The user types the values into a
    /// secure form shown in the conversation transcript. The values go to an
    /// encrypted store and are injected into your environment on your next
    /// turn; you never see them.
    /// Returns at once with `{widget_id, status}`.
    /// Status `pending`: END YOUR TURN now; you are resumed with a message
    /// once the user answers or dismisses the form.
    /// This holds whether or not anyone has the transcript open right now:
    /// the form waits there (for days) until the person comes back, so do
    /// not retry or poll.
    /// Status `already_present`: every name is already configured, so you
    /// can proceed now.
    /// NEVER ask the user to paste secret values into the chat.
    #[tool(input_schema = input_schema::<EnvVars>())]
    async fn request_env_vars(
        &self,
        Parameters(args): Parameters<JsonObject>,
        RequestState(state): RequestState,
        Responses(responses): Responses,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let retry = Retry { state, responses };
        reply(self.create::<EnvVars>(&ctx, args, retry).await)
    }

    /// Ask the user 1 to 4 multiple-choice questions, shown as a form in the
    /// transcript. Each question has a short header chip, 2 to 4 options
    /// (label, description, optional markdown preview) and may allow several
    /// choices; the user can always type an "Other" answer instead. Answers
    /// come back as an object keyed by question text: a string for a
    /// one-choice question, an array of strings for a `multi_select` one
    /// (the choices, then any typed answer).
    /// By default this returns `{widget_id, status: "pending"}` at once,
    /// whether or not anyone has the transcript open (the form waits there
    /// until the person comes back): END YOUR TURN and the answers arrive as
    /// your next message. With
    /// `wait_seconds` (at most 300) it waits and returns the answers; if the
    /// time runs out it returns `pending` and the answers still arrive as a
    /// message later. There is never a default answer on timeout.
    #[tool(input_schema = input_schema::<AskUser>())]
    async fn ask_user(
        &self,
        Parameters(args): Parameters<JsonObject>,
        RequestState(state): RequestState,
        Responses(responses): Responses,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let retry = Retry { state, responses };
        reply(self.create::<AskUser>(&ctx, args, retry).await)
    }

    /// Ask the user one simple question: `confirm` (Yes / No by default),
    /// `buttons`, `select`, `radio` or `checkbox` (several choices: its
    /// answer is an array of strings), with an optional preselected
    /// `default`. Returns and waits exactly like `ask_user`.
    #[tool(input_schema = input_schema::<Ask>())]
    async fn ask(
        &self,
        Parameters(args): Parameters<JsonObject>,
        RequestState(state): RequestState,
        Responses(responses): Responses,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let retry = Retry { state, responses };
        reply(self.create::<Ask>(&ctx, args, retry).await)
    }

    /// Ask the user something they answer by typing, with no options to
    /// pick from: "What's the staging URL?". 1 to 10 `fields`, each with a
    /// `name` (the answer's key) and a `type`: `text` (one line, the
    /// default), `multiline`, `number`, `integer`, `boolean`, `email`, `url`
    /// or `date` (YYYY-MM-DD); optional `min`/`max` (a value, or a text's
    /// length), `pattern`, `required` (default true) and `default` (only
    /// prefills the input). The answers come back keyed by `name`, typed
    /// (numbers as numbers, booleans as booleans). Never ask for secrets
    /// here: use `request_env_vars`. Returns and waits exactly like
    /// `ask_user`.
    #[tool(input_schema = input_schema::<crate::widgets::Fields>())]
    async fn ask_fields(
        &self,
        Parameters(args): Parameters<JsonObject>,
        RequestState(state): RequestState,
        Responses(responses): Responses,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let retry = Retry { state, responses };
        reply(
            self.create::<crate::widgets::Fields>(&ctx, args, retry)
                .await,
        )
    }

    /// Ask the user before running a tool: they see the tool and its input
    /// (a shell command as a command, a path as a path, else JSON) and
    /// answer Deny (maybe with a reason), Once, or Always. "Always" approves
    /// later identical requests at once (`already_present`) until the user
    /// revokes it. Returns and waits like `ask_user`; without waiting, END
    /// YOUR TURN and do not run the tool until the answer arrives.
    #[tool(input_schema = input_schema::<Approval>())]
    async fn request_approval(
        &self,
        Parameters(args): Parameters<JsonObject>,
        RequestState(state): RequestState,
        Responses(responses): Responses,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let retry = Retry { state, responses };
        reply(self.create::<Approval>(&ctx, args, retry).await)
    }

    /// Ask the user a clarifying question when a request is ambiguous, with
    /// a widget that fits the ambiguity: `question` says why you ask (1 to
    /// 1000 characters), `widget` how the user answers. Widget types:
    /// `choice` (pick one of 2 to 10 options `{label, description?,
    /// markdown?}`, or several with `multi_select`);
    /// `mapping` (connect each of `left` to one of `right`, 1 to 200 items
    /// `{id, label, group?}` a side; `allow_unmapped`, `allow_many_to_one`);
    /// `tree` (1 to 500 nodes `{id, label, parent_id?, metadata?}`; the user
    /// moves, renames, deletes or adds as `allow_reparent`, `allow_rename`,
    /// `allow_delete`, `allow_add` say);
    /// `annotation` (`image`: the file as base64, PNG, JPEG or WebP of at
    /// most 2 MiB, never a path or URL; `tools` ⊆ rectangle, circle, arrow,
    /// text: the user draws on it).
    /// The user can always
    /// answer in their own words, beside the widget or instead of it, or
    /// dismiss the question (maybe with a note). The answer is
    /// `{structured, freeform}`: `structured` is, for `choice`,
    /// `{"selected": [label…]}` (empty when the user only typed);
    /// for `mapping`, `{"mappings": [{"left", "right"}…]}` (ids);
    /// for `tree`, `{"nodes": [...]}` with the edits applied (new nodes'
    /// ids start `new-`); for `annotation`, `{"annotations": [{"tool",
    /// "coords", "text"?}…]}` in image pixels;
    /// `freeform` is the typed text ("" when none).
    /// Returns `{widget_id, status: "pending"}` at once, whether or not
    /// anyone has the transcript open (the question waits there):
    /// END YOUR TURN and the answer arrives as your next message. With
    /// `wait_seconds` (at most 300) it waits and returns the answer in
    /// `result`; if the time runs out it returns `pending` and the answer
    /// still arrives as a message later. There is never a default answer.
    #[tool(input_schema = input_schema::<Clarification>())]
    async fn request_clarification(
        &self,
        Parameters(args): Parameters<JsonObject>,
        RequestState(state): RequestState,
        Responses(responses): Responses,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let retry = Retry { state, responses };
        reply(self.create::<Clarification>(&ctx, args, retry).await)
    }

    /// The current state of a widget you created in this session: its
    /// status (`pending`, `submitted`, `dismissed`, `expired`, `cancelled`
    /// or `already_present`), its parameters and its result (names and
    /// scope, never a value). There is no need to poll: you are resumed
    /// with a message when the widget resolves.
    #[tool(
        input_schema = schema::<WidgetStatusInput>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_widget_status(
        &self,
        Parameters(args): Parameters<JsonObject>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let call = async {
            let input: WidgetStatusInput = parse_args(args)?;
            self.widget_status(&ctx, &input.widget_id).await
        };
        respond(call.await)
    }

    /// Withdraw a pending request you made in this session (it was asked
    /// by mistake, or is no longer needed), with an optional `reason` the
    /// user sees on its card. To ask an amended one instead, create the new
    /// request with `replaces: {widget_id, reason}`, which withdraws the old
    /// one in the same step. Refused with `widget_not_pending` once the user
    /// answered: then the answer stands and arrives as usual.
    #[tool(input_schema = schema::<super::life::CancelInput>())]
    async fn cancel_widget(
        &self,
        Parameters(args): Parameters<JsonObject>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let call = async { self.cancel(&ctx, parse_args(args)?).await };
        respond(call.await)
    }

    /// The requests of this session still waiting for the user, newest
    /// first, with their parameters (never a secret value): to recover
    /// what you asked after losing your context. Answers still arrive as
    /// messages; there is no need to poll.
    #[tool(
        input_schema = schema::<super::life::ListInput>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_pending_widgets(
        &self,
        Parameters(args): Parameters<JsonObject>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let call = async {
            let _: super::life::ListInput = parse_args(args)?;
            self.list_pending(&ctx).await
        };
        respond(call.await)
    }
}

/// The tool router, built once: `#[tool_handler]` would otherwise build it
/// (every tool's description and schema) again for each `tools/list`,
/// each tool lookup and each call.
static ROUTER: std::sync::LazyLock<ToolRouter<AgentTools>> =
    std::sync::LazyLock::new(AgentTools::tool_router);

fn router() -> &'static ToolRouter<AgentTools> {
    &ROUTER
}

#[tool_handler(router = router())]
impl ServerHandler for AgentTools {
    /// A call of a tool that does not exist is the protocol error the MCP
    /// specification (2025-11-25, "Tools", "Error Handling") shows:
    /// `-32602` naming the unknown tool.
    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        if let Some(result) = super::apps::call(self, &request, &context).await {
            return Ok(result.into());
        }
        let router = router();
        let mut request = request;
        let name = super::life::canonical(&request.name).to_owned();
        request.name = name.into();
        if router.get(&request.name).is_none() {
            return Err(rmcp::ErrorData::invalid_params(
                super::scrub::unknown_tool(&request.name),
                None,
            ));
        }
        let call = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        router.call(call).await
    }

    fn get_info(&self) -> rmcp::model::ServerConfig {
        super::apps::server_info(super::INSTRUCTIONS)
    }

    /// The tools, with MCP Apps' `_meta.ui` for a host that declared the
    /// extension (see `super::apps`).
    async fn list_tools(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        Ok(super::apps::list_tools(router().list_all(), &context))
    }

    async fn list_resources(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, rmcp::ErrorData> {
        super::apps::list_resources(&context)
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, rmcp::ErrorData> {
        super::apps::read_resource(&request.uri, &context)
    }
}

/// Who is calling, as the `/mcp` middleware authenticated them; never taken
/// from tool arguments.
pub(super) fn caller(ctx: &RequestContext<RoleServer>) -> AppResult<&AgentSession> {
    ctx.extensions
        .get::<Parts>()
        .and_then(|parts| parts.extensions.get::<AgentSession>())
        .ok_or_else(|| {
            AppError::Internal(anyhow::anyhow!(
                "an MCP tool was called without an authenticated agent session"
            ))
        })
}

/// The JSON schema of request `R`'s arguments, as `tools/list` shows it,
/// with the fields every creating tool takes (`super::life`).
fn input_schema<R: Request>() -> std::sync::Arc<JsonObject> {
    super::life::with_life(schema::<R::Input>())
}

/// The JSON schema of a tool's arguments, as `tools/list` shows it (see
/// `super::schema`: portable, never nullable).
fn schema<T: JsonSchema + 'static>() -> std::sync::Arc<JsonObject> {
    super::schema::input_schema::<T>()
}

/// A tool's arguments, parsed as a REST body is: a refusal is the
/// documented `invalid_body` error naming the field path, never quoting
/// what was sent (rmcp's own parsing would quote it).
pub(super) fn parse_args<T: serde::de::DeserializeOwned>(args: JsonObject) -> AppResult<T> {
    parse_value(Value::Object(args))
}

/// Whether the call speaks 2026-07-28 or later (no server-to-client
/// requests; elicitation by `input_required` results and retries).
fn modern(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// A wait that ended because its caller gave up; nobody reads this.
pub(super) fn gone() -> AppError {
    AppError::Conflict {
        code: "request_cancelled",
        message: "the caller cancelled the request; the answer stays queued as a prompt".into(),
    }
}

/// What a retry of a widget tool brings back (2026-07-28).
struct Retry {
    /// The `requestState` echoed (see `super::offers`).
    state: Option<String>,
    /// The client's responses to the elicitation, keyed as asked.
    responses: Option<InputResponses>,
}

/// What a widget tool answers: its result, or an elicitation for the
/// client to show first.
enum Reply {
    Done(Value),
    Input(InputRequiredResult),
}

impl From<Value> for Reply {
    fn from(value: Value) -> Self {
        Self::Done(value)
    }
}

fn reply(result: AppResult<Reply>) -> CallToolResponse {
    match result {
        Ok(Reply::Input(input)) => CallToolResponse::InputRequired(input),
        Ok(Reply::Done(value)) => respond(Ok(value)).into(),
        Err(err) => respond(Err(err)).into(),
    }
}

pub(super) fn respond(result: AppResult<Value>) -> CallToolResult {
    match result {
        Ok(value) => CallToolResult::structured(value),
        // A refusal as a tool error, so the agent sees it and can fix its
        // call: the REST API's `{"error":{"code","message"}}` body, so codes
        // match across interfaces.
        Err(err) => CallToolResult::error(vec![ContentBlock::text(err.to_body().1.to_string())]),
    }
}
