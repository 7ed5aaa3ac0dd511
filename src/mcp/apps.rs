//! MCP Apps (the `io.modelcontextprotocol/ui` extension, SEP-1865, stable
//! 2026-01-26): a host that declares the extension renders a widget tool's
//! result in a sandboxed iframe, from the one document at [`URI`].
//!
//! - Negotiated as the specification says: only a host whose client
//!   capabilities hold `extensions["io.modelcontextprotocol/ui"]` with
//!   `mimeTypes` naming [`MIME`] sees `_meta.ui.resourceUri` on the widget
//!   tools, the app-only tools ([`VIEW_TOOL`], [`ANSWER_TOOL`], with
//!   `_meta.ui.visibility: ["app"]`, which the host keeps out of the model's
//!   tool list), and the resource. Any other client sees the tools as
//!   before, and calling an app-only tool is an unknown tool to it.
//! - The document (`super::app_document`) is the transcript's own stylesheet and
//!   scripts (`static/app.css`, `static/app.js` and the clarification
//!   scripts, the same files as the pages, compiled in) with
//!   `static/mcp-app.js`, which speaks the app side of the postMessage
//!   protocol. It asks [`VIEW_TOOL`] for the widget's card, rendered by the
//!   same templates as the transcript, and sends an answer with
//!   [`ANSWER_TOOL`]. No external origin: the resource's `_meta.ui.csp`
//!   declares no domain (the host's restrictive default), and the document
//!   carries a stricter policy of its own.
//! - An answer given in the app comes through the agent's own MCP connection:
//!   it is the agent's client speaking, never the person. It is taken only
//!   for questions (`ask`, `ask_user`, clarifications), only where the
//!   operator and the session opted in to in-client answers (the same
//!   opt-in as form mode: `serve --elicitation form|both` and the session's
//!   `elicitation`), and goes through the transcript's checks and
//!   transition, recorded as `answered_by: "mcp-app"` with the audit actor
//!   `mcp-app:SESSION`, and only for a question the agent's own tool call
//!   created and so showed in this app (`super::shown`; once): never one
//!   the host asked over REST. Env vars and approvals never: their app
//!   shows what is asked and opens widgetd's own page (`/widgets/{id}`).

use rmcp::RoleServer;
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject, Tool};
use rmcp::service::RequestContext;
use schemars::JsonSchema;
use secrecy::SecretString;
use serde::Deserialize;
use serde_json::{Value, json};

use super::agent::{AgentTools, caller, parse_args, respond};
use crate::cards::{Vault, Viewer, render_widget};
use widgetd_domain::sessions;
use widgetd_domain::widgets::engine::kind::AGENT_CLIENT_KINDS;
use widgetd_domain::widgets::{self, AnswerBody, Answerer, WidgetId, WidgetStatus};
use widgetd_domain::{Error, Result};

/// The extension's identifier (SEP-1724 extension capabilities).
pub(super) const EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The resource's MIME type.
pub(super) const MIME: &str = "text/html;profile=mcp-app";

/// The one app document, for every widget tool.
pub(super) const URI: &str = "ui://widgetd/widget.html";

/// App-only: the card of a widget of the caller's session, to show.
pub(super) const VIEW_TOOL: &str = "app_widget_view";

/// App-only: the answer given in the app.
pub(super) const ANSWER_TOOL: &str = "app_widget_answer";

/// The tools whose result the app renders.
const WIDGET_TOOLS: &[&str] = &[
    "ask",
    "ask_fields",
    "ask_user",
    "request_clarification",
    "request_env_vars",
    "request_approval",
];

/// The most fields an answer from the app may carry.
const MAX_FIELDS: usize = 4000;

/// Whether the calling host declared the extension with our MIME type.
pub(super) fn declared(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.client_capabilities()
        .and_then(|c| c.extensions)
        .and_then(|e| e.get(EXTENSION).cloned())
        .and_then(|settings| settings.get("mimeTypes").cloned())
        .and_then(|types| {
            types
                .as_array()
                .map(|t| t.iter().any(|m| m.as_str() == Some(MIME)))
        })
        .unwrap_or(false)
}

fn meta(value: Value) -> rmcp::model::MetaObject {
    match value {
        Value::Object(map) => rmcp::model::MetaObject(map),
        _ => rmcp::model::MetaObject(JsonObject::new()),
    }
}

/// `tools/list`: `listed` as it is, or, for a host that declared the
/// extension, with `_meta.ui.resourceUri` on the widget tools and the
/// app-only tools added.
pub(super) fn tools(mut listed: Vec<Tool>, ui: bool) -> Vec<Tool> {
    if !ui {
        return listed;
    }
    for tool in &mut listed {
        if WIDGET_TOOLS.contains(&tool.name.as_ref()) {
            let mut object = tool.meta.take().map(|m| m.0).unwrap_or_default();
            object.insert("ui".into(), json!({ "resourceUri": URI }));
            tool.meta = Some(rmcp::model::MetaObject(object));
        }
    }
    let app_only = json!({ "ui": { "resourceUri": URI, "visibility": ["app"] } });
    listed.push(
        Tool::new(
            VIEW_TOOL,
            "For widgetd's app only: the card of a widget of this session, to show.",
            super::schema::input_schema::<ViewInput>(),
        )
        .with_meta(meta(app_only.clone())),
    );
    listed.push(
        Tool::new(
            ANSWER_TOOL,
            "For widgetd's app only: the answer the person gave in the app's form.",
            super::schema::input_schema::<AnswerInput>(),
        )
        .with_meta(meta(app_only)),
    );
    listed
}

/// The resource as `resources/list` names it (only to a host that
/// declared the extension).
pub(super) fn resources(ui: bool) -> Value {
    let resources = match ui {
        true => vec![json!({
            "uri": URI,
            "name": "widgetd widget",
            "description": "A widgetd question, clarification, approval or env var request, shown from the tool's result",
            "mimeType": MIME,
            "_meta": resource_meta(),
        })],
        false => Vec::new(),
    };
    json!({ "resources": resources })
}

/// `resources/read` of [`URI`]: the document, or `None` for any other URI
/// or a host that did not declare the extension.
pub(super) fn read(uri: &str, ui: bool) -> Option<Value> {
    (ui && uri == URI).then(|| {
        json!({ "contents": [{
            "uri": URI,
            "mimeType": MIME,
            "text": super::app_document::document(),
            "_meta": resource_meta(),
        }] })
    })
}

/// The strictest `_meta.ui` the specification allows: no domain of any
/// kind (the host's restrictive default policy), no permission, a border.
fn resource_meta() -> Value {
    json!({ "ui": {
        "csp": { "connectDomains": [], "resourceDomains": [], "frameDomains": [], "baseUriDomains": [] },
        "prefersBorder": true,
    } })
}

/// The arguments of [`VIEW_TOOL`].
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ViewInput {
    /// The `widget_id` of the tool result the app shows.
    widget_id: String,
}

/// The arguments of [`ANSWER_TOOL`].
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AnswerInput {
    /// The widget answered.
    widget_id: String,
    /// The form's fields, in order, as `[name, value]` pairs.
    fields: Vec<(String, String)>,
}

/// An app-only tool's call, for a host that declared the extension; `None`
/// for any other tool or client (then the name is an unknown tool).
pub(super) async fn call(
    tools: &AgentTools,
    request: &CallToolRequestParams,
    ctx: &RequestContext<RoleServer>,
) -> Option<CallToolResult> {
    let name = request.name.as_ref();
    if (name != VIEW_TOOL && name != ANSWER_TOOL) || !declared(ctx) {
        return None;
    }
    let args = request.arguments.clone().unwrap_or_default();
    Some(respond(match name {
        VIEW_TOOL => view(tools, ctx, args).await,
        _ => answer(tools, ctx, args).await,
    }))
}

/// Whether the operator and the caller's session opted in to answers given
/// in the agent's client (the setting form mode uses).
async fn in_client_answers(
    tools: &AgentTools,
    agent: &widgetd_domain::ids::SessionId,
) -> Result<bool> {
    let session = sessions::elicitation(&mut *tools.state.db.read.acquire().await?, agent).await?;
    Ok(session.and(tools.state.settings.elicitation).form())
}

/// A widget of the caller's session; any other is not found.
async fn own_widget(
    tools: &AgentTools,
    agent: &widgetd_domain::ids::SessionId,
    id: &str,
) -> Result<widgets::WidgetRow> {
    let id = WidgetId::parse(id).ok_or(Error::NotFound("widget"))?;
    let row = widgets::get_widget(&mut *tools.state.db.read.acquire().await?, &id).await?;
    if &row.session_id != agent {
        return Err(Error::NotFound("widget"));
    }
    Ok(row)
}

/// [`VIEW_TOOL`]: the card as the transcript renders it, with a form only
/// where the app may answer; the URL of widgetd's own page otherwise.
/// Never a value: the card of env vars names them, and the vault it is
/// drawn with is empty.
async fn view(
    tools: &AgentTools,
    ctx: &RequestContext<RoleServer>,
    args: JsonObject,
) -> Result<Value> {
    let agent = caller(ctx)?;
    let input: ViewInput = parse_args(args)?;
    let row = own_widget(tools, &agent.session_id, &input.widget_id).await?;
    let question = AGENT_CLIENT_KINDS.contains(&row.kind.as_str());
    let answer_here = question
        && tools.shown.may_answer(&agent.session_id, &row.id)
        && in_client_answers(tools, &agent.session_id).await?;
    let vault = Vault {
        owner: String::new(),
        saved_globals: Default::default(),
    };
    let viewer = Viewer {
        csrf: "",
        can_answer: answer_here,
        vault: &vault,
        standalone: false,
    };
    let body = render_widget(&row, &viewer, None)?;
    let html = format!(
        "<section class=\"card widget kind-{kind} status-{status}\" id=\"w-{id}\" \
         data-widget=\"{id}\" data-status=\"{status}\">{body}</section>",
        kind = row.kind,
        status = row.status.as_str(),
        id = row.id.as_str(),
    );
    let pending = row.status == WidgetStatus::Pending;
    let mut shown = json!({
        "widget_id": row.id,
        "kind": row.kind,
        "status": row.status,
        "answer_here": answer_here && pending,
        "page_url": format!("{}/widgets/{}", tools.state.settings.public_url, row.id.as_str()),
        "html": html,
    });
    if pending && let Some(image) = annotation_image(&row) {
        shown["image"] = json!(image);
    }
    Ok(shown)
}

/// An annotation's image as a `data:` URL (the document reaches no origin).
fn annotation_image(row: &widgets::WidgetRow) -> Option<String> {
    use base64::Engine as _;
    let (mime, bytes) = widgets::kinds::clarification::annotation_image(&row.kind, &row.params)?;
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    Some(format!("data:{mime};base64,{data}"))
}

/// [`ANSWER_TOOL`]: the app's form, answered as the agent's client.
async fn answer(
    tools: &AgentTools,
    ctx: &RequestContext<RoleServer>,
    args: JsonObject,
) -> Result<Value> {
    let agent = caller(ctx)?;
    let input: AnswerInput = parse_args(args)?;
    let row = own_widget(tools, &agent.session_id, &input.widget_id).await?;
    if !AGENT_CLIENT_KINDS.contains(&row.kind.as_str()) {
        return Err(Error::invalid(
            "not_answerable_here",
            "this request is answered only by the person, in widgetd's pages",
        ));
    }
    if !in_client_answers(tools, &agent.session_id).await? {
        return Err(Error::invalid(
            "in_client_answers_off",
            "answers in the agent's client are off for this session; answer in widgetd's \
             transcript (the operator's `--elicitation` and the session's `elicitation` must \
             both allow form mode)",
        ));
    }
    if !tools.shown.may_answer(&agent.session_id, &row.id) {
        return Err(not_offered());
    }
    if input.fields.len() > MAX_FIELDS {
        return Err(Error::invalid(
            "too_many_fields",
            "the answer has too many fields",
        ));
    }
    let fields = input
        .fields
        .into_iter()
        .filter(|(name, _)| name != "csrf_token" && name != "return_to")
        .map(|(name, value)| (name, SecretString::from(value)))
        .collect();
    let by = Answerer::AgentApp(&agent.session_id);
    let answered = widgets::submit(
        &tools.state,
        &row,
        by,
        AnswerBody::Form(fields),
        &agent.client,
    )
    .await;
    // Taken once it ended; a refused answer leaves it for the person to
    // correct the form.
    if matches!(answered, Ok(_) | Err(Error::WidgetNotPending(_))) {
        tools.shown.take(&agent.session_id, &row.id);
    }
    Ok(serde_json::to_value(answered?).map_err(anyhow::Error::from)?)
}

/// `422 not_offered_to_app`: the app answers only a question its own
/// agent's call created and showed in it (see `super::shown`). Not
/// `invalid_request_state`: the app sends no `requestState`, and that
/// code's advice (call the tool again without it) means nothing to it;
/// like the app's other refusals, this one is a well-formed request refused
/// for this widget, and says where the question is answered instead.
fn not_offered() -> Error {
    Error::invalid(
        "not_offered_to_app",
        "this question was not asked by this agent's own tool call in this app (or was \
         answered, or is older than 20 minutes); answer it in widgetd's transcript",
    )
}

/// What `initialize` says of the server: tools, resources (the app
/// document), and the extension.
pub(super) fn server_info(instructions: &str) -> rmcp::model::ServerConfig {
    let capabilities: rmcp::model::ServerCapabilities = serde_json::from_value(json!({
        "tools": {},
        "resources": {},
        "extensions": { EXTENSION: { "mimeTypes": [MIME] } },
    }))
    .unwrap_or_default();
    rmcp::model::ServerConfig::new(capabilities)
        .with_server_info(rmcp::model::Implementation::new(
            "widgetd",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(instructions)
}

/// `tools/list` for this call: see [`tools`]. A list that depends on what
/// the client declared is cached by that client only.
pub(super) fn list_tools(
    listed: Vec<Tool>,
    ctx: &RequestContext<RoleServer>,
) -> rmcp::model::ListToolsResult {
    let modern = ctx
        .protocol_version()
        .is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28);
    let mut result = rmcp::model::ListToolsResult::with_all_items(tools(listed, declared(ctx)));
    result.result_type = Some(rmcp::model::ResultType::COMPLETE);
    result.ttl_ms = modern.then_some(0);
    result.cache_scope = modern.then_some(rmcp::model::CacheScope::Private);
    result
}

/// `resources/list`: see [`resources`].
pub(super) fn list_resources(
    ctx: &RequestContext<RoleServer>,
) -> Result<rmcp::model::ListResourcesResult, rmcp::ErrorData> {
    serde_json::from_value(resources(declared(ctx)))
        .map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))
}

/// `resources/read`: see [`read`]; anything else is not found.
pub(super) fn read_resource(
    uri: &str,
    ctx: &RequestContext<RoleServer>,
) -> Result<rmcp::model::ReadResourceResponse, rmcp::ErrorData> {
    let Some(found) = read(uri, declared(ctx)) else {
        return Err(rmcp::ErrorData::resource_not_found(
            "no such resource",
            None,
        ));
    };
    serde_json::from_value::<rmcp::model::ReadResourceResult>(found)
        .map(Into::into)
        .map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))
}
