//! What every creating tool does: the arguments parsed and validated as the
//! REST twin's body, the widget created, then an elicitation (a 2026-07-28
//! `input_required` result or a 2025-11-25 `elicitation/create`) or the
//! wait; a retry with `requestState` goes to `answers.rs`. A question made
//! for a host that declared MCP Apps is recorded as shown in its app
//! (`shown.rs`), the only kind `app_widget_answer` takes.

use rmcp::RoleServer;
use rmcp::model::{
    CallToolResponse, ElicitRequest, InputRequest, InputRequests, InputRequiredResult,
    InputResponses, JsonObject, ProtocolVersion,
};
use rmcp::service::RequestContext;
use serde_json::Value;

use super::agent::{AgentTools, caller, gone, parse_args, respond, schema};
use super::inflight::CallKey;
use super::{Elicitation, elicit};
use widgetd_domain::Result;
use widgetd_domain::audit::Actor;
use widgetd_domain::sessions;
use widgetd_domain::widgets::engine::kind::AGENT_CLIENT_KINDS;
use widgetd_domain::widgets::{self, Cause, EnvVars, Request, WidgetId, WidgetStatus};

impl AgentTools {
    /// Every widget tool: the arguments parsed and validated as the REST
    /// twin's body, the widget created in the caller's session, then either
    /// one elicitation for the agent's client to show (see [`elicit`]) or
    /// the answer waited for when `wait_seconds` asks for it. A retry that
    /// echoes a `requestState` continues the widget it names instead.
    pub(super) async fn create<R: Request>(
        &self,
        ctx: &RequestContext<RoleServer>,
        args: JsonObject,
        retry: Retry,
    ) -> Result<Reply> {
        let mut args = args;
        let life = widgets::engine::life::split(&mut args, self.state.settings.widget_ttl_ms)?;
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
        // The one kind of widget an MCP App may answer: a question this
        // call made, shown in the app of a host that declared it.
        if created.status == WidgetStatus::Pending
            && AGENT_CLIENT_KINDS.contains(&R::NAME)
            && super::apps::declared(ctx)
        {
            self.shown.show(session, &created.widget_id);
        }
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
    pub(super) async fn modes(&self, ctx: &RequestContext<RoleServer>) -> Result<Elicitation> {
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
    ) -> Result<Option<rmcp::model::ElicitRequestParams>> {
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
    ) -> Result<Value> {
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
}

/// The JSON schema of request `R`'s arguments, as `tools/list` shows it,
/// with the fields every creating tool takes (`super::life`).
pub(super) fn input_schema<R: Request>() -> std::sync::Arc<JsonObject> {
    super::life::with_life(schema::<R::Input>())
}

/// Whether the call speaks 2026-07-28 or later (no server-to-client
/// requests; elicitation by `input_required` results and retries).
fn modern(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// What a retry of a widget tool brings back (2026-07-28).
pub(super) struct Retry {
    /// The `requestState` echoed (see `super::offers`).
    pub(super) state: Option<String>,
    /// The client's responses to the elicitation, keyed as asked.
    pub(super) responses: Option<InputResponses>,
}

/// What a widget tool answers: its result, or an elicitation for the
/// client to show first.
pub(super) enum Reply {
    Done(Value),
    Input(InputRequiredResult),
}

impl From<Value> for Reply {
    fn from(value: Value) -> Self {
        Self::Done(value)
    }
}

pub(super) fn reply(result: Result<Reply>) -> CallToolResponse {
    match result {
        Ok(Reply::Input(input)) => CallToolResponse::InputRequired(input),
        Ok(Reply::Done(value)) => respond(Ok(value)).into(),
        Err(err) => respond(Err(err)).into(),
    }
}
