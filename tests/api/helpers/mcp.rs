//! An MCP client as agents' hosts run one: rmcp's own, over Streamable
//! HTTP, with the agent token; a tool call and what it answered.

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{ClientInitializeError, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

use super::app::TestApp;

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
