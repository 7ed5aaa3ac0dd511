//! The MCP endpoint, driven by rmcp's own client over Streamable HTTP.

use reqwest::StatusCode;
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

use crate::helpers::mcp::{call, connect, error_code, error_text, structured};
use crate::helpers::{TestApp, assert_error, scene, spawn_app};

/// An `initialize` POST as any MCP client sends it, with extra headers.
async fn raw_initialize(
    app: &TestApp,
    token: Option<&str>,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut request = app
        .client
        .post(format!("{}/mcp", app.url))
        .header("accept", "application/json, text/event-stream")
        .json(&json!({
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": { "name": "raw", "version": "0" }
            }
        }));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap()
}

fn env_request(names: &[&str]) -> Value {
    json!({ "names": names, "reason": "to call the API" })
}

#[tokio::test]
async fn tools_list_shows_every_tool_with_its_full_schema() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();

    let info = client.peer_info().expect("the server introduced itself");
    let server = info.server_info.as_ref().expect("server info");
    assert_eq!(server.name, "widgetd");
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "ask",
            "ask_fields",
            "ask_user",
            "cancel_widget",
            "get_widget_status",
            "list_pending_widgets",
            "request_approval",
            "request_clarification",
            "request_env_vars"
        ]
    );

    let tool = |name: &str| tools.iter().find(|t| t.name == name).unwrap();
    let request = tool("request_env_vars");
    let schema = Value::Object((*request.input_schema).clone());
    let mut properties: Vec<&str> = schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    properties.sort_unstable();
    let expected = [
        "default_scope",
        "expires_in_seconds",
        "instructions",
        "names",
        "reason",
        "replaces",
        "variable_metadata",
    ];
    assert_eq!(properties, expected, "{schema}");
    assert_eq!(schema["required"], json!(["names", "reason"]));
    assert_eq!(schema["additionalProperties"], false);
    let description = request.description.as_deref().unwrap();
    assert!(description.contains("END YOUR TURN"), "{description}");
    assert!(
        description.contains("whether or not anyone has the transcript open"),
        "the agent learns that nobody need be watching: {description}"
    );
    assert!(
        description.contains("NEVER ask the user to paste secret values into the chat"),
        "{description}"
    );

    let status = Value::Object((*tool("get_widget_status").input_schema).clone());
    assert_eq!(status["required"], json!(["widget_id"]));
    assert_eq!(status["additionalProperties"], false);

    let ask_user = Value::Object((*tool("ask_user").input_schema).clone());
    assert_eq!(ask_user["required"], json!(["questions"]));
    assert_eq!(
        ask_user["$defs"]["Question"]["required"],
        json!(["question", "header", "options"])
    );
    assert_eq!(ask_user["$defs"]["Question"]["additionalProperties"], false);
    let ask = Value::Object((*tool("ask").input_schema).clone());
    // One question at the top level, or several `items` answered together.
    assert!(ask["properties"]["question"].is_object(), "{ask}");
    assert!(ask["properties"]["items"].is_object(), "{ask}");
    assert!(ask["properties"]["allow_freeform"].is_object(), "{ask}");
    assert!(ask.to_string().contains("checkbox"), "{ask}");
    let question = &ask_user["$defs"]["Question"]["properties"];
    assert!(
        question.get("kind").is_none(),
        "stored-only fields stay out: {question}"
    );
}

#[tokio::test]
async fn request_env_vars_creates_a_pending_widget_the_agent_can_read_back() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();

    let created = structured(
        call(
            &client,
            "request_env_vars",
            env_request(&["B_KEY", "A_KEY"]),
        )
        .await,
    );
    assert_eq!(created["status"], "pending");
    assert_eq!(created.as_object().unwrap().len(), 2, "{created}");
    let id = created["widget_id"].as_str().unwrap();

    let response = app.get(&format!("/api/v1/widgets/{id}"), &s.agent).await;
    assert_eq!(response.status(), StatusCode::OK);
    let rest: Value = response.json().await.unwrap();
    assert_eq!(rest["status"], "pending");
    assert_eq!(rest["session_id"], s.session);
    assert_eq!(rest["params"]["names"], json!(["A_KEY", "B_KEY"]));

    let status = structured(call(&client, "get_widget_status", json!({ "widget_id": id })).await);
    assert_eq!(status["status"], "pending");
    assert_eq!(status["widget_id"], id);
    assert_eq!(status["params"], rest["params"]);

    // The audit row names the agent and where the call came from.
    let audited = app
        .count(&format!(
            "SELECT count(*) FROM audit_log WHERE action = 'widget.create' AND widget_id = '{id}' \
             AND actor = 'agent:{}' AND client_addr = '127.0.0.1'",
            s.session
        ))
        .await;
    assert_eq!(audited, 1);
}

#[tokio::test]
async fn names_already_configured_come_back_already_present() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let response = app
        .put_env(&s.host, "A_KEY", &json!({ "value": "x" }))
        .await;
    assert!(response.status().is_success(), "{}", response.status());
    let client = connect(&app, Some(&s.agent)).await.unwrap();

    let cases: [(&[&str], &str); 2] = [
        (&["A_KEY"], "already_present"),
        // One name still missing: the user is asked for both.
        (&["A_KEY", "B_KEY"], "pending"),
    ];
    for (names, expected) in cases {
        let created = structured(call(&client, "request_env_vars", env_request(names)).await);
        assert_eq!(created["status"], expected, "{names:?}");
    }
}

#[tokio::test]
async fn invalid_arguments_come_back_as_tool_errors_with_stable_codes() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let eleven: Vec<String> = (0..11).map(|i| format!("KEY_{i}")).collect();

    let cases = [
        (json!({ "names": ["PATH"], "reason": "r" }), "blocked_name"),
        (json!({ "names": eleven, "reason": "r" }), "names_count"),
        (
            json!({ "names": ["A_KEY"], "reason": "  " }),
            "invalid_reason",
        ),
        (
            json!({ "names": ["A_KEY"], "reason": "r", "variable_metadata": { "B_KEY": {} } }),
            "unknown_metadata_name",
        ),
    ];
    for (arguments, code) in cases {
        let result = call(&client, "request_env_vars", arguments.clone()).await;
        assert_eq!(error_code(&result), code, "{arguments}");
    }

    // An unknown key is refused, naming the allowed ones.
    let typo = json!({ "nmes": ["A_KEY"], "reason": "r" });
    let text = error_text(&call(&client, "request_env_vars", typo).await);
    assert!(text.contains("unknown field; allowed:"), "{text}");
    assert!(
        !text.contains("nmes"),
        "the unknown key is not repeated: {text}"
    );
    assert!(
        text.contains("`names`") && text.contains("`variable_metadata`"),
        "{text}"
    );

    assert_eq!(app.count("SELECT count(*) FROM widgets").await, 0);
}

#[tokio::test]
async fn only_a_live_agent_token_may_connect() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;

    let cases = [
        ("no token", None, "missing_token"),
        (
            "unknown agent token",
            Some("wda_not-a-real-token"),
            "invalid_token",
        ),
        ("API token", Some(s.host.as_str()), "invalid_token"),
        (
            "not a bearer token",
            Some("something-else"),
            "invalid_token",
        ),
    ];
    for (label, token, code) in cases {
        assert!(connect(&app, token).await.is_err(), "{label} connected");
        let response = raw_initialize(&app, token, &[]).await;
        assert_eq!(response.headers()["www-authenticate"], "Bearer", "{label}");
        assert_error(response, StatusCode::UNAUTHORIZED, code, None).await;
    }
    assert!(connect(&app, Some(&s.agent)).await.is_ok());
}

#[tokio::test]
async fn foreign_origins_and_hosts_are_refused() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;

    let response = raw_initialize(&app, Some(&s.agent), &[("origin", &app.url)]).await;
    assert_eq!(response.status(), StatusCode::OK);
    // A page on another site, even holding a valid token.
    let origin = [("origin", "https://evil.example")];
    let response = raw_initialize(&app, Some(&s.agent), &origin).await;
    assert_error(response, StatusCode::FORBIDDEN, "forbidden", None).await;
    // DNS rebinding: our address under someone else's name (refused for
    // every route, before rmcp's own check).
    let host = [("host", "evil.example")];
    let response = raw_initialize(&app, Some(&s.agent), &host).await;
    assert_error(
        response,
        StatusCode::MISDIRECTED_REQUEST,
        "unknown_host",
        None,
    )
    .await;
}

#[tokio::test]
async fn an_agent_sees_only_its_own_sessions_widgets() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let (_, other_agent) = app.session(&s.host).await;
    let owner = connect(&app, Some(&s.agent)).await.unwrap();
    let other = connect(&app, Some(&other_agent)).await.unwrap();
    let created = structured(call(&owner, "request_env_vars", env_request(&["A_KEY"])).await);
    let id = created["widget_id"].as_str().unwrap();

    let unknown = uuid::Uuid::new_v4().to_string();
    let cases = [
        (&other, id),
        (&owner, "not-a-uuid"),
        (&owner, unknown.as_str()),
    ];
    for (client, widget_id) in cases {
        let result = call(
            client,
            "get_widget_status",
            json!({ "widget_id": widget_id }),
        )
        .await;
        assert_eq!(error_code(&result), "not_found", "{widget_id}");
    }
    let mine = structured(call(&owner, "get_widget_status", json!({ "widget_id": id })).await);
    assert_eq!(mine["status"], "pending");
}

#[tokio::test]
async fn an_archived_sessions_agent_token_is_refused() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();

    let archive = format!("/api/v1/sessions/{}/archive", s.session);
    let response = app.post_json(&archive, &s.host, &json!({})).await;
    assert_eq!(response.status(), StatusCode::OK);

    // Every request is authenticated anew, so a connected client is cut off too.
    let arguments = env_request(&["A_KEY"]).as_object().unwrap().clone();
    let call = client
        .call_tool(CallToolRequestParams::new("request_env_vars").with_arguments(arguments))
        .await;
    assert!(call.is_err(), "{call:?}");
    assert!(connect(&app, Some(&s.agent)).await.is_err());
    let response = raw_initialize(&app, Some(&s.agent), &[]).await;
    assert_error(response, StatusCode::UNAUTHORIZED, "invalid_token", None).await;
}

/// Wrong tool arguments get the REST body's `invalid_body` error with the
/// field path, over every tool, and never quote what was sent: the agent may
/// have put a secret where a name belongs.
#[tokio::test]
async fn bad_tool_arguments_get_invalid_body_without_quoting_input() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let canary = "sk-live-CANARY-4d1e";
    let cases = [
        (
            "request_env_vars",
            json!({ "names": canary, "reason": "x" }),
            "names",
        ),
        (
            "request_env_vars",
            json!({ "names": ["A_KEY"], "reason": "x", canary: 1 }),
            "unknown field",
        ),
        (
            "request_env_vars",
            json!({ "reason": canary }),
            "missing field `names`",
        ),
        (
            "ask",
            json!({ "question": "Go?", "widget": canary }),
            "widget",
        ),
        (
            "ask_user",
            json!({ "questions": [{ "question": canary }] }),
            "questions.0",
        ),
        (
            "request_approval",
            json!({ "tool": "Bash", "input": {}, "wait_seconds": canary }),
            "wait_seconds",
        ),
        (
            "get_widget_status",
            json!({ "widget_id": [canary] }),
            "widget_id",
        ),
    ];
    for (tool, arguments, says) in cases {
        let result = call(&client, tool, arguments).await;
        let text = error_text(&result);
        assert_eq!(error_code(&result), "invalid_body", "{tool}: {text}");
        assert!(text.contains(says), "{tool}: {text}");
        assert!(!text.contains("CANARY"), "{tool} quoted its input: {text}");
    }
    assert_eq!(app.count("SELECT count(*) FROM widgets").await, 0);
}

/// A JSON-RPC method we do not know is refused without repeating its name.
#[tokio::test]
async fn an_unknown_method_is_not_echoed() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let r = app
        .client
        .post(format!("{}/mcp", app.url))
        .bearer_auth(&s.agent)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({ "jsonrpc": "2.0", "id": 3, "method": "sk-live-CANARY-9a0b", "params": {} }))
        .send()
        .await
        .unwrap();
    let status = r.status();
    let text = r.text().await.unwrap();
    assert!(!text.contains("CANARY"), "{status}: {text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["error"]["code"], -32601, "{text}");
    assert_eq!(body["id"], 3, "{text}");
}

/// A call of a tool that does not exist names it, as the MCP specification
/// (2025-11-25, "Tools", "Error Handling") shows, but only a plain
/// identifier: anything else gets a fixed text.
#[tokio::test]
async fn an_unknown_tool_is_named_only_when_its_name_is_plain() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    for (name, message) in [
        ("no_such_tool", "Unknown tool: no_such_tool"),
        ("request-env-vars2", "Unknown tool: request-env-vars2"),
        ("sk-live CANARY \"x\"", "Unknown tool"),
        ("ünïcode", "Unknown tool"),
    ] {
        let request = CallToolRequestParams::new(name.to_owned());
        let err = client.call_tool(request).await.unwrap_err();
        let rmcp::service::ServiceError::McpError(err) = err else {
            panic!("{name}: {err:?}");
        };
        assert_eq!(err.code.0, -32602, "{name}");
        assert_eq!(err.message, message, "{name}");
    }
    let long = "a".repeat(65);
    let err = client
        .call_tool(CallToolRequestParams::new(long))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("Unknown tool"), "{err}");
    assert!(!err.to_string().contains("aaaa"), "{err}");
}

/// A daemon on a loopback address is the same origin under any loopback
/// name: a page at `http://localhost:PORT` may reach `/mcp` as one at
/// `http://127.0.0.1:PORT` may; another port or scheme may not.
#[tokio::test]
async fn localhost_and_127_0_0_1_are_one_origin_for_a_loopback_daemon() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let port = app.url.rsplit(':').next().unwrap().to_owned();
    for origin in [
        format!("http://localhost:{port}"),
        format!("http://[::1]:{port}"),
    ] {
        let response = raw_initialize(&app, Some(&s.agent), &[("origin", &origin)]).await;
        assert_eq!(response.status(), StatusCode::OK, "{origin}");
    }
    for origin in [
        format!("http://localhost:{}", port.parse::<u16>().unwrap() ^ 1),
        format!("https://localhost:{port}"),
        format!("http://localhost.evil.example:{port}"),
    ] {
        let response = raw_initialize(&app, Some(&s.agent), &[("origin", &origin)]).await;
        assert_error(response, StatusCode::FORBIDDEN, "forbidden", None).await;
    }
}

/// Every tool's input schema is portable: no `type` list with `"null"`, no
/// `{"type": "null"}` branch and no `null` in an `enum` anywhere (Gemini's
/// function declarations refuse them); and `ask_user` tells the model a
/// multi-select answer is an array.
#[tokio::test]
async fn tool_schemas_never_offer_null_and_descriptions_match_the_answers() {
    fn walk(at: &str, value: &Value, found: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::Array(types)) = map.get("type")
                    && types.iter().any(|t| t == "null")
                {
                    found.push(format!("{at}: type {value}"));
                }
                if map.get("type").is_some_and(|t| t == "null") {
                    found.push(format!("{at}: null branch"));
                }
                if let Some(Value::Array(values)) = map.get("enum")
                    && values.iter().any(Value::is_null)
                {
                    found.push(format!("{at}: null in enum"));
                }
                for (key, inner) in map {
                    walk(&format!("{at}.{key}"), inner, found);
                }
            }
            Value::Array(items) => {
                for (i, inner) in items.iter().enumerate() {
                    walk(&format!("{at}.{i}"), inner, found);
                }
            }
            _ => {}
        }
    }
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 9);
    let mut found = Vec::new();
    for tool in &tools {
        let schema = Value::Object((*tool.input_schema).clone());
        walk(&tool.name, &schema, &mut found);
    }
    assert!(found.is_empty(), "{found:#?}");

    let described = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        tool.description.as_deref().unwrap().to_owned()
    };
    let ask_user = described("ask_user");
    assert!(
        ask_user.contains("an array of strings for a `multi_select` one"),
        "{ask_user}"
    );
    assert!(!ask_user.contains("comma-joined"), "{ask_user}");
    assert!(!described("ask").contains("comma-joined"));
}
