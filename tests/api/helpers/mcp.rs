//! An MCP client as agents' hosts run one: rmcp's own, over Streamable
//! HTTP, with the agent token; a tool call and what it answered.

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{ClientInitializeError, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

use super::app::{Scene, TestApp, scene, spawn_app_with};

pub type McpClient = RunningService<RoleClient, ()>;

/// Connects as the holder of `token` (sent as `Bearer <token>`), if any.
pub async fn connect(
    app: &TestApp,
    token: Option<&str>,
) -> Result<McpClient, ClientInitializeError> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", app.url));
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
}

pub async fn call(client: &McpClient, tool: &'static str, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("tool arguments are a JSON object");
    };
    client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
        .await
        .unwrap()
}

/// The structured content of a successful call.
pub fn structured(result: CallToolResult) -> Value {
    assert_ne!(result.is_error, Some(true), "{result:?}");
    result.structured_content.expect("structured content")
}

/// The text of a tool error.
pub fn error_text(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    result.content[0]
        .as_text()
        .expect("a text block")
        .text
        .clone()
}

/// The stable code in a tool error's `{"error":{"code","message"}}` text.
pub fn error_code(result: &CallToolResult) -> String {
    let body: Value = serde_json::from_str(&error_text(result)).unwrap();
    body["error"]["code"].as_str().unwrap().to_owned()
}

/// `request_clarification` over MCP; the id of the pending widget it made.
pub async fn clarify_over_mcp(client: &McpClient, body: Value) -> String {
    let made = structured(call(client, "request_clarification", body).await);
    assert_eq!(made["status"], "pending", "{made}");
    made["widget_id"].as_str().unwrap().to_owned()
}

/// The actors of the audit rows of `action` for `widget`, as stored.
pub async fn actors(app: &TestApp, action: &str, widget: &str) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT actor FROM audit_log WHERE action = $1 AND widget_id = $2 ORDER BY id",
    )
    .bind(action)
    .bind(widget)
    .fetch_all(&app.state.db.read)
    .await
    .unwrap()
}

/// An app whose operator allows both modes (`serve --elicitation both`).
pub async fn form_app() -> TestApp {
    spawn_app_with(|s| s.domain.elicitation = widgetd_domain::sessions::Elicitation::Both).await
}

/// `user`'s scene, with a session whose host opted in to both modes.
pub async fn opted_in(app: &TestApp, user: &str) -> Scene {
    let (scene, modes) = opted_in_as(app, user, "both").await;
    assert_eq!(modes, "both");
    scene
}

/// `user`'s scene with a session created with `"elicitation": modes`, and
/// what the daemon says it will use.
pub async fn opted_in_as(app: &TestApp, user: &str, modes: &str) -> (Scene, String) {
    let mut scene = scene(app, user).await;
    let r = app
        .post_json(
            "/api/v1/sessions",
            &scene.host,
            &json!({ "elicitation": modes }),
        )
        .await;
    let created: Value = r.json().await.unwrap();
    scene.agent = created["agent_token"].as_str().unwrap().to_owned();
    scene.session = created["session_id"].as_str().unwrap().to_owned();
    (scene, created["elicitation"].as_str().unwrap().to_owned())
}
