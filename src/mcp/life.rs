//! The tools of a widget's life (`cancel_widget`, `list_pending_widgets`),
//! the fields every creating tool shares in its schema (`expires_in_seconds`,
//! `replaces`, see `crate::widgets::life`), and the tool names of other
//! systems accepted as aliases of ours.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::JsonObject;
use rmcp::service::RequestContext;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::tools::{AgentTools, caller};
use crate::audit::Actor;
use crate::error::{AppError, AppResult};
use crate::widgets::{self, Cause, WidgetId, WidgetStatus, life};

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
    ) -> AppResult<Value> {
        let agent = caller(ctx)?;
        let id = WidgetId::parse(&input.widget_id).ok_or(AppError::NotFound("widget"))?;
        let reason = match input.reason {
            Some(raw) => widgets::typed::plain_text(&raw, &life::REASON)?,
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
    pub(super) async fn list_pending(&self, ctx: &RequestContext<RoleServer>) -> AppResult<Value> {
        let agent = caller(ctx)?;
        let mut conn = self.state.db.read.acquire().await?;
        let pending = WidgetStatus::Pending;
        let widgets = life::list(&mut conn, &agent.session_id, pending).await?;
        Ok(life::listing(&agent.session_id, pending, widgets))
    }
}
