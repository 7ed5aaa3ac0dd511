//! What every MCP tool shares: the server value ([`AgentTools`]), who is
//! calling, parsing arguments, and answering a refusal as a tool error
//! carrying the REST API's stable error code (the one place MCP maps the
//! domain's error).

use axum::http::request::Parts;
use rmcp::RoleServer;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use rmcp::service::RequestContext;
use schemars::JsonSchema;
use serde_json::Value;
use widgetd_domain::input::parse_value;
use widgetd_domain::{Error, Result};

use super::AgentSession;
use super::offers::Offers;
use super::shown::Shown;
use crate::state::AppState;

/// The MCP server: one per request (stateless), sharing the app state and
/// the tool router (built once, see [`router`]).
#[derive(Clone)]
pub(super) struct AgentTools {
    pub(super) state: AppState,
    /// What this daemon's 2026-07-28 calls offered (see [`super::offers`]).
    pub(super) offers: Offers,
    /// The questions this daemon's calls showed in an MCP App (see
    /// [`super::shown`]).
    pub(super) shown: Shown,
}

impl AgentTools {
    pub(super) fn new(state: AppState) -> Self {
        Self {
            state,
            offers: Offers::default(),
            shown: Shown::default(),
        }
    }
}

/// Who is calling, as the `/mcp` middleware authenticated them; never taken
/// from tool arguments.
pub(super) fn caller(ctx: &RequestContext<RoleServer>) -> Result<&AgentSession> {
    ctx.extensions
        .get::<Parts>()
        .and_then(|parts| parts.extensions.get::<AgentSession>())
        .ok_or_else(|| {
            Error::Internal(anyhow::anyhow!(
                "an MCP tool was called without an authenticated agent session"
            ))
        })
}

/// The JSON schema of a tool's arguments, as `tools/list` shows it (see
/// `super::schema`: portable, never nullable).
pub(super) fn schema<T: JsonSchema + 'static>() -> std::sync::Arc<JsonObject> {
    super::schema::input_schema::<T>()
}

/// A tool's arguments, parsed as a REST body is: a refusal is the
/// documented `invalid_body` error naming the field path, never quoting
/// what was sent (rmcp's own parsing would quote it).
pub(super) fn parse_args<T: serde::de::DeserializeOwned>(args: JsonObject) -> Result<T> {
    parse_value(Value::Object(args))
}

/// A wait that ended because its caller gave up; nobody reads this.
pub(super) fn gone() -> Error {
    Error::Conflict {
        code: "request_cancelled",
        message: "the caller cancelled the request; the answer stays queued as a prompt".into(),
    }
}

/// How MCP tells a domain error: a tool error (so the agent sees it and
/// can fix its call) whose text is the REST API's
/// `{"error":{"code","message"}}` body, so codes match across interfaces.
/// Internal failures are logged and told generically, as over REST.
pub(super) fn respond(result: Result<Value>) -> CallToolResult {
    match result {
        Ok(value) => CallToolResult::structured(value),
        Err(err) => CallToolResult::error(vec![ContentBlock::text(error_body(&err).to_string())]),
    }
}

/// The `{"error":{"code","message"}}` of a domain error, with the status a
/// refused answer found (`widget_not_pending`).
pub(super) fn error_body(err: &Error) -> Value {
    let mut body =
        serde_json::json!({ "error": { "code": err.code(), "message": err.public_message() } });
    if let Some(current) = err.widget_status() {
        body["error"]["status"] = serde_json::json!(current);
    }
    body
}
