//! `request_approval`: Deny / Once / Always, the standing rules that
//! "Always" leaves, and revoking them.
//!
//! These are the tests that drive Chromium; the others are in
//! `tests/api/widgets/approval.rs`.

use serde_json::{Value, json};

use crate::helpers::{Scene, TestApp, scene, spawn_app};

// ---------------------------------------------------------------------------
// Over MCP and in a real browser; denial after reload; unknown widget kinds.
// ---------------------------------------------------------------------------

use crate::helpers::chrome::Chrome;
use crate::helpers::last_prompt;
use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::key::Key;

/// A row of the approval rules table.
const RULE_ROW: &str = r#"tr[id^="rule-"]"#;

type McpClient = rmcp::service::RunningService<rmcp::RoleClient, ()>;

/// An rmcp client connected with the agent token `token`.
async fn mcp_connect(app: &TestApp, token: &str) -> McpClient {
    use rmcp::ServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", app.url))
        .auth_header(token);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("the agent connects")
}

/// Calls `tool` and returns its structured result (panics on a tool error).
async fn mcp_call(client: &McpClient, tool: &'static str, arguments: Value) -> Value {
    let Value::Object(arguments) = arguments else {
        panic!("tool arguments are a JSON object");
    };
    let result = client
        .call_tool(rmcp::model::CallToolRequestParams::new(tool).with_arguments(arguments))
        .await
        .unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    result.structured_content.expect("structured content")
}

/// `textContent` (trimmed) of every element matching `css`.
async fn texts_of(chrome: &Chrome, css: &str) -> Value {
    chrome
        .js(&format!(
            "return [...document.querySelectorAll('{css}')].map(e => e.textContent.trim());"
        ))
        .await
}

/// Presses and releases `key` on whatever has the focus.
async fn press(chrome: &Chrome, key: Key) {
    let key: char = key.into();
    let keyboard = KeyActions::new("keyboard".into())
        .then(KeyAction::Down { value: key })
        .then(KeyAction::Up { value: key });
    chrome.perform_actions(keyboard).await.unwrap();
}

/// What has the focus: `[tag, name, value, text]`.
async fn focused(chrome: &Chrome) -> Value {
    chrome
        .js("const e = document.activeElement; return [e.tagName, e.name || '', e.value || '', e.textContent.trim()];")
        .await
}

#[tokio::test]
async fn request_approval_over_mcp_and_answered_in_a_real_browser() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let client = mcp_connect(&app, &agent).await;
    let publish =
        json!({ "tool": "Bash", "input": { "command": "cargo publish" }, "reason": "release" });

    // The tool is listed with a closed schema: `tool` and `input` required.
    let tools = client.list_all_tools().await.unwrap();
    let tool = tools
        .iter()
        .find(|t| t.name == "request_approval")
        .expect("request_approval is listed");
    let schema = Value::Object((*tool.input_schema).clone());
    let mut required: Vec<&str> = schema["required"]
        .as_array()
        .unwrap_or_else(|| panic!("no required list: {schema}"))
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    required.sort_unstable();
    assert_eq!(required, ["input", "tool"], "{schema}");
    assert_eq!(schema["additionalProperties"], false, "{schema}");

    let created = mcp_call(&client, "request_approval", publish.clone()).await;
    assert_eq!(created["status"], "pending", "{created}");
    assert_eq!(created.as_object().unwrap().len(), 2, "{created}");
    let id = created["widget_id"].as_str().unwrap().to_owned();
    let stored: Value = app
        .get(&format!("/api/v1/widgets/{id}"), &agent)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(stored["kind"], "approval");
    assert_eq!(stored["session_id"], session.as_str());
    assert_eq!(
        stored["params"],
        json!({ "tool": "Bash", "input": { "command": "cargo publish" }, "reason": "release" })
    );
    assert!(app.prompts(&host, &session, 0).await.is_empty());

    let chrome = Chrome::launch().await;
    chrome.sign_in(&app.url, "alice").await;
    let transcript_url = format!("{}/sessions/{session}", app.url);
    chrome.open(&transcript_url).await;
    let card = format!("#w-{id}");
    chrome.wait_css(&format!("{card} form.approval")).await;
    assert_eq!(
        texts_of(&chrome, &format!("{card} h2")).await,
        json!(["The agent wants to run Bash"])
    );
    assert_eq!(
        texts_of(&chrome, &format!("{card} h2 code")).await,
        json!(["Bash"])
    );
    assert_eq!(
        texts_of(&chrome, &format!("{card} pre.command")).await,
        json!(["$ cargo publish"])
    );
    assert_eq!(
        texts_of(&chrome, &format!("{card} p.reason")).await,
        json!(["release"])
    );
    assert_eq!(
        texts_of(&chrome, &format!("{card} button")).await,
        json!([
            "Deny",
            "Allow once",
            "Always allow",
            "Dismiss",
            "Always allow commands like this"
        ])
    );
    chrome
        .js(&format!(
            "document.querySelector('{card}').scrollIntoView(); return true;"
        ))
        .await;
    let shot = chrome.screenshot_to("approval-form.png").await;
    assert!(std::fs::metadata(&shot).unwrap().len() > 1000, "{shot:?}");

    // Keyboard only: from the reason field, Tab to "Always allow", Enter.
    chrome
        .css(&format!("#w-{id}-reason"))
        .await
        .send_keys(&Key::Tab)
        .await
        .unwrap();
    assert_eq!(
        focused(&chrome).await,
        json!(["BUTTON", "decision", "deny", "Deny"])
    );
    press(&chrome, Key::Tab).await;
    press(&chrome, Key::Tab).await;
    assert_eq!(
        focused(&chrome).await,
        json!(["BUTTON", "decision", "always", "Always allow"])
    );
    chrome
        .active_element()
        .await
        .unwrap()
        .send_keys(&Key::Enter)
        .await
        .unwrap();
    chrome.wait_css(&format!("{card} .badge-submitted")).await;
    assert_eq!(
        chrome.current_url().await.unwrap().path(),
        format!("/sessions/{session}")
    );
    let badge = texts_of(&chrome, &format!("{card} .badge-submitted")).await;
    assert!(
        badge[0]
            .as_str()
            .unwrap()
            .contains("Always approved (this session only) by alice"),
        "{badge}"
    );
    assert_eq!(chrome.count(&format!("{card} form")).await, 0);
    let answered: Value = app
        .get(&format!("/api/v1/widgets/{id}"), &agent)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(answered["status"], "submitted", "{answered}");
    assert_eq!(answered["result"]["decision"], "always", "{answered}");
    assert_eq!(answered["result"]["answered_by"], "alice", "{answered}");
    // The page's "Always" is for this session unless the person picks
    // "all my sessions".
    assert_eq!(answered["result"]["scope"], "session", "{answered}");
    assert_eq!(
        last_prompt(&app, &host, &session).await,
        "[Agor] User approved Bash for this exact input, now and in future requests of this session. You can run it now."
    );

    // A reload shows the same decision.
    chrome.open(&transcript_url).await;
    chrome.wait_css("#transcript").await;
    let badge = texts_of(&chrome, &format!("{card} .badge-submitted")).await;
    assert!(
        badge[0]
            .as_str()
            .unwrap()
            .contains("Always approved (this session only) by alice"),
        "after a reload: {badge}"
    );
    assert_eq!(chrome.count(&format!("{card} form")).await, 0);

    // The same request again is approved at once.
    let again = mcp_call(&client, "request_approval", publish.clone()).await;
    assert_eq!(again["status"], "already_present", "{again}");
    assert_ne!(again["widget_id"], id.as_str());
    assert_eq!(
        last_prompt(&app, &host, &session).await,
        "[Agor] Bash is pre-approved for this exact input (always allowed). You can run it now."
    );

    // The rule is listed on the settings page, and revoked there.
    chrome
        .open(&format!("{}/settings/approvals", app.url))
        .await;
    chrome.wait_css(RULE_ROW).await;
    assert_eq!(chrome.count(RULE_ROW).await, 1);
    assert_eq!(
        texts_of(&chrome, &format!("{RULE_ROW} td code")).await,
        json!(["Bash", r#"{"command":"cargo publish"}"#])
    );
    let added = texts_of(&chrome, &format!("{RULE_ROW} td.small")).await;
    assert!(added[0].as_str().unwrap().ends_with("by alice"), "{added}");
    chrome
        .css(&format!("{RULE_ROW} button[type=submit]"))
        .await
        .click()
        .await
        .unwrap();
    chrome.wait_css("#no-rules").await;
    assert_eq!(chrome.count(RULE_ROW).await, 0);
    assert_eq!(
        chrome.current_url().await.unwrap().path(),
        "/settings/approvals"
    );

    // Revoked: the same request asks again.
    let third = mcp_call(&client, "request_approval", publish).await;
    assert_eq!(third["status"], "pending", "{third}");
    chrome.close().await;
}
