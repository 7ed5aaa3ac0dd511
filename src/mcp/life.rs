//! The tools of a widget's life (`get_widget_status`, `cancel_widget`,
//! `list_pending_widgets`),
//! the fields every creating tool shares in its schema (`expires_in_seconds`,
//! `replaces`, see `widgetd_domain::widgets::engine::life`), and the tool names of other
//! systems accepted as aliases of ours.

use std::sync::Arc;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::agent::{AgentTools, caller, parse_args, respond, schema};
use widgetd_domain::access::{self, Caller, Need};
use widgetd_domain::audit::Actor;
use widgetd_domain::widgets::engine::life;
use widgetd_domain::widgets::{self, Cause, WidgetId, WidgetStatus, WidgetView};
use widgetd_domain::{Error, Result};

/// Tool names of the systems widgetd's tools come from, accepted in
/// `tools/call` as the tool they name here, and never listed by
/// `tools/list` (two names for one tool make models hesitate).
/// `agor_widgets_request_env_vars` is Agor's name of its env-var widget.
pub(super) const ALIASES: &[(&str, &str)] =
    &[("agor_widgets_request_env_vars", "request_env_vars")];

/// The tool an alias names, or the name itself.
pub(super) fn canonical(name: &str) -> &str {
    ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |(_, tool)| tool)
}

/// A creating tool's schema with the fields every creating call takes.
pub(super) fn with_life(schema: Arc<JsonObject>) -> Arc<JsonObject> {
    let life = super::schema::input_schema::<life::LifeInput>();
    let mut schema = (*schema).clone();
    if let (Some(Value::Object(props)), Some(Value::Object(own))) =
        (schema.get_mut("properties"), life.get("properties"))
    {
        for (key, value) in own {
            props.insert(key.clone(), value.clone());
        }
    }
    if let Some(Value::Object(own_defs)) = life.get("$defs") {
        let defs = schema
            .entry("$defs")
            .or_insert_with(|| Value::Object(JsonObject::new()));
        if let Value::Object(defs) = defs {
            for (key, value) in own_defs {
                defs.insert(key.clone(), value.clone());
            }
        }
    }
    Arc::new(schema)
}

/// The arguments of `cancel_widget`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct CancelInput {
    /// The `widget_id` of a pending request you made in this session.
    pub widget_id: String,
    /// Why you withdraw it, shown to the person (at most 500 characters).
    #[serde(default)]
    pub reason: Option<String>,
}

/// The arguments of `list_pending_widgets`: none.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ListInput {}

impl AgentTools {
    /// `cancel_widget`: the calling agent withdraws a pending widget of its
    /// own session.
    pub(super) async fn cancel(
        &self,
        ctx: &RequestContext<RoleServer>,
        input: CancelInput,
    ) -> Result<Value> {
        let agent = caller(ctx)?;
        let id = WidgetId::parse(&input.widget_id).ok_or(Error::NotFound("widget"))?;
        let reason = match input.reason {
            Some(raw) => widgets::engine::text::plain_text(&raw, &life::REASON)?,
            None => None,
        };
        let actor = Actor::Agent(agent.session_id.clone());
        let cause = Cause {
            actor: &actor,
            client: &agent.client,
        };
        let view =
            life::cancel_by_agent(&self.state, &id, &agent.session_id, reason, cause).await?;
        Ok(serde_json::to_value(view).map_err(anyhow::Error::from)?)
    }

    /// `list_pending_widgets`: the pending widgets of the calling agent's
    /// session, newest first.
    pub(super) async fn list_pending(&self, ctx: &RequestContext<RoleServer>) -> Result<Value> {
        let agent = caller(ctx)?;
        let mut conn = self.state.db.read.acquire().await?;
        let pending = WidgetStatus::Pending;
        let widgets = life::list(&mut conn, &agent.session_id, pending).await?;
        Ok(life::listing(&agent.session_id, pending, widgets))
    }
}

/// The arguments of `get_widget_status`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WidgetStatusInput {
    /// The `widget_id` that `request_env_vars` returned.
    widget_id: String,
}

impl AgentTools {
    async fn widget_status(
        &self,
        ctx: &RequestContext<RoleServer>,
        widget_id: &str,
    ) -> Result<Value> {
        let agent = caller(ctx)?;
        let id = WidgetId::parse(widget_id).ok_or(Error::NotFound("widget"))?;
        let widget = widgets::read_widget(&self.state, &id).await?;
        // Another session's widget is reported missing, not forbidden, so an
        // agent cannot learn which ids exist elsewhere.
        let caller = Caller::Agent(&agent.session_id);
        access::authorize(&self.state, caller, widget.session_id.as_str(), Need::Watch)
            .await
            .map_err(|_| Error::NotFound("widget"))?;
        let view = WidgetView::from(widget);
        Ok(serde_json::to_value(view).map_err(anyhow::Error::from)?)
    }
}

#[tool_router(router = life_tools, vis = "pub(super)")]
impl AgentTools {
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
    /// answered (then the answer stands and arrives as usual), and with
    /// `not_asked_by_agent` for a request your host asked, not you.
    #[tool(input_schema = schema::<CancelInput>())]
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
        input_schema = schema::<ListInput>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_pending_widgets(
        &self,
        Parameters(args): Parameters<JsonObject>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let call = async {
            let _: ListInput = parse_args(args)?;
            self.list_pending(&ctx).await
        };
        respond(call.await)
    }
}
