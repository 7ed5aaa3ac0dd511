//! MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865, 2026-01-26), driven by
//! rmcp's client over Streamable HTTP as a host that declares the extension
//! (and one that does not): the tools' `_meta.ui`, the app document, the
//! app-only tools, and what is never answered there.

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    ProtocolVersion, ReadResourceRequestParams,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::helpers::mcp::{actors, error_code, form_app, opted_in};
use crate::helpers::{TestApp, ask, created, prompt_of, scene, spawn_app, widget_status};
use crate::mcp::elicitation::audited;

const URI: &str = "ui://widgetd/widget.html";
const MIME: &str = "text/html;profile=mcp-app";
const WIDGET_TOOLS: [&str; 5] = [
    "ask",
    "ask_user",
    "request_clarification",
    "request_env_vars",
    "request_approval",
];

pub(crate) type Host = RunningService<RoleClient, ClientConfig>;

/// A host connected with `agent`'s token, declaring MCP Apps (`apps`) or
/// not, speaking 2026-07-28 (`modern`) or 2025-11-25 (`initialize`).
pub(crate) async fn host(app: &TestApp, agent: &str, apps: bool, modern: bool) -> Host {
    let capabilities: ClientCapabilities = match apps {
        true => serde_json::from_value(json!({
            "extensions": { "io.modelcontextprotocol/ui": { "mimeTypes": [MIME] } }
        }))
        .unwrap(),
        false => ClientCapabilities::default(),
    };
    let info = ClientConfig::new(capabilities, Implementation::new("test-host", "1.0.0"));
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", app.url))
        .auth_header(agent);
    let transport = StreamableHttpClientTransport::from_config(config);
    match modern {
        true => {
            let lifecycle = ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            };
            info.serve_with_lifecycle(transport, lifecycle)
                .await
                .unwrap()
        }
        false => info.serve(transport).await.unwrap(),
    }
}

pub(crate) async fn call_raw(host: &Host, tool: &str, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("tool arguments are a JSON object");
    };
    host.call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .unwrap()
}

pub(crate) async fn call(host: &Host, tool: &str, arguments: Value) -> Value {
    let result = call_raw(host, tool, arguments).await;
    assert_ne!(result.is_error, Some(true), "{tool}: {result:?}");
    result.structured_content.expect("structured content")
}

async fn tools(host: &Host) -> Vec<Value> {
    host.list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| serde_json::to_value(t).unwrap())
        .collect()
}

fn named<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

/// The app document as `resources/read` returns it, checked for its type
/// and its policy.
pub(crate) async fn document(host: &Host) -> String {
    let read = host
        .read_resource(ReadResourceRequestParams::new(URI))
        .await
        .unwrap();
    let read = serde_json::to_value(read).unwrap();
    let contents = read["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 1, "{read}");
    assert_eq!(contents[0]["uri"], URI);
    assert_eq!(contents[0]["mimeType"], MIME);
    let csp = &contents[0]["_meta"]["ui"]["csp"];
    for key in [
        "connectDomains",
        "resourceDomains",
        "frameDomains",
        "baseUriDomains",
    ] {
        assert_eq!(csp[key], json!([]), "{key} declares no domain");
    }
    assert!(contents[0]["_meta"]["ui"].get("permissions").is_none());
    contents[0]["text"].as_str().unwrap().to_owned()
}

/// A host that declares the extension sees `_meta.ui.resourceUri` on every
/// widget tool, the two app-only tools marked `visibility: ["app"]`, the
/// resource, and one self-contained document that reaches no origin.
#[tokio::test]
async fn a_host_that_declares_mcp_apps_gets_the_app() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    for modern in [false, true] {
        let host = host(&app, &s.agent, true, modern).await;
        let tools = tools(&host).await;
        for name in WIDGET_TOOLS {
            assert_eq!(
                named(&tools, name)["_meta"]["ui"],
                json!({ "resourceUri": URI }),
                "{name}, modern {modern}"
            );
        }
        assert!(named(&tools, "get_widget_status").get("_meta").is_none());
        for name in ["app_widget_view", "app_widget_answer"] {
            assert_eq!(
                named(&tools, name)["_meta"]["ui"]["visibility"],
                json!(["app"])
            );
        }
        let listed = host.list_all_resources().await.unwrap();
        let listed = serde_json::to_value(listed).unwrap();
        assert_eq!(listed[0]["uri"], URI, "{listed}");
        assert_eq!(listed[0]["mimeType"], MIME, "{listed}");

        let html = document(&host).await;
        assert!(html.starts_with("<!DOCTYPE html>"), "an HTML5 document");
        assert!(html.contains("http-equiv=\"Content-Security-Policy\""));
        assert!(html.contains("connect-src 'none'"));
        assert!(html.contains("function updateForms"), "the page's script");
        assert!(html.contains("type-ranking"), "the ranking's script");
        assert!(html.contains("app_widget_answer"), "the app's script");
        for external in ["<script src", "<link", "@import", "url(http", "src=\"http"] {
            assert!(!html.contains(external), "no external resource: {external}");
        }
        host.cancel().await.unwrap();
    }
}

/// A host without the extension sees the tools as before: no `_meta.ui`,
/// no app-only tool (calling one is an unknown tool), no resource.
#[tokio::test]
async fn a_host_without_the_extension_sees_nothing_new() {
    let app = form_app().await;
    let alice = opted_in(&app, "alice").await;
    for modern in [false, true] {
        let host = host(&app, &alice.agent, false, modern).await;
        let tools = tools(&host).await;
        for tool in &tools {
            assert!(tool["_meta"].get("ui").is_none(), "{tool}");
        }
        let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        assert!(!names.contains(&"app_widget_view"), "{names:?}");
        assert!(!names.contains(&"app_widget_answer"), "{names:?}");
        let listed = host.list_all_resources().await.unwrap();
        assert!(listed.is_empty(), "{listed:?}");
        assert!(
            host.read_resource(ReadResourceRequestParams::new(URI))
                .await
                .is_err()
        );
        let made = call(&host, "ask", json!({ "question": "Deploy now?" })).await;
        let id = made["widget_id"].as_str().unwrap();
        let Value::Object(arguments) = json!({ "widget_id": id, "fields": [["answer.0", "Yes"]] })
        else {
            unreachable!()
        };
        let err = host
            .call_tool(CallToolRequestParams::new("app_widget_answer").with_arguments(arguments))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("Unknown tool"), "{err}");
        let status = call(&host, "get_widget_status", json!({ "widget_id": id })).await;
        assert_eq!(status["status"], "pending");
        host.cancel().await.unwrap();
    }
}

/// Where the operator and the session opted in, a question shown in the
/// app is answered there: the transcript's checks and transition, one
/// winner, recorded as the agent's client (MCP App), never the person; the
/// agent's next `get_widget_status` has the structured answer.
#[tokio::test]
async fn the_app_answers_a_ranking_as_the_agents_client() {
    let app = form_app().await;
    let alice = opted_in(&app, "alice").await;
    let host = host(&app, &alice.agent, true, false).await;
    let made = call(
        &host,
        "request_clarification",
        json!({
            "question": "What should we build first?",
            "widget": { "type": "ranking", "items": [
                { "id": "sso", "label": "Single sign-on" },
                { "id": "csv", "label": "CSV export" },
                { "id": "dark", "label": "Dark mode" },
            ] },
        }),
    )
    .await;
    let id = made["widget_id"].as_str().unwrap();
    let view = call(&host, "app_widget_view", json!({ "widget_id": id })).await;
    assert_eq!(view["answer_here"], true, "{view}");
    let html = view["html"].as_str().unwrap();
    assert!(html.contains("type-ranking") && html.contains("name=\"position.2\""));
    assert!(!html.contains("csrf_token\" value=\"wd"), "no form token");

    // Refused as the transcript refuses it: nothing changes.
    let bad = call_raw(
        &host,
        "app_widget_answer",
        json!({ "widget_id": id, "fields": [["position.7", "1"]] }),
    )
    .await;
    assert_eq!(error_code(&bad), "unknown_item");
    let answer = json!({ "widget_id": id, "fields": [["position.2", "1"], ["freeform", ""]] });
    let done = call(&host, "app_widget_answer", answer.clone()).await;
    assert_eq!(done["status"], "submitted", "{done}");
    let again = call_raw(&host, "app_widget_answer", answer).await;
    assert_eq!(error_code(&again), "not_offered_to_app", "answered once");

    let status = call(&host, "get_widget_status", json!({ "widget_id": id })).await;
    assert_eq!(status["status"], "submitted", "{status}");
    assert_eq!(
        status["result"]["structured"],
        json!({ "ranked": ["dark", "sso", "csv"] }),
        "{status}"
    );
    assert_eq!(status["result"]["answered_by"], "mcp-app", "{status}");
    assert!(audited(&app, "widget.submit", id).await.is_empty());
    assert_eq!(
        actors(&app, "widget.submit", id).await,
        vec![format!("mcp-app:{}", alice.session)]
    );
    let ended = call(&host, "app_widget_view", json!({ "widget_id": id })).await;
    assert_eq!(ended["status"], "submitted");
    assert!(
        ended["html"]
            .as_str()
            .unwrap()
            .contains("the agent&#39;s client (MCP App)")
            || ended["html"]
                .as_str()
                .unwrap()
                .contains("the agent&#x27;s client (MCP App)"),
        "{ended}"
    );
    host.cancel().await.unwrap();
}

/// Env vars and approvals are never answered in the app, opted in or not:
/// it shows what is asked, no form, and widgetd's own page to open.
#[tokio::test]
async fn env_vars_and_approvals_are_never_answered_in_the_app() {
    let app = form_app().await;
    let alice = opted_in(&app, "alice").await;
    let host = host(&app, &alice.agent, true, true).await;
    let cases = [
        (
            "request_env_vars",
            json!({ "names": ["API_KEY"], "reason": "to deploy" }),
            vec![["value.API_KEY", "guess"], ["scope", "session"]],
        ),
        (
            "request_approval",
            json!({ "tool": "Bash", "input": { "command": "rm -rf build" } }),
            vec![["decision", "once"]],
        ),
    ];
    for (tool, args, fields) in cases {
        let made = call(&host, tool, args).await;
        let id = made["widget_id"].as_str().unwrap();
        let view = call(&host, "app_widget_view", json!({ "widget_id": id })).await;
        assert_eq!(view["answer_here"], false, "{tool}: {view}");
        assert_eq!(view["page_url"], format!("{}/widgets/{id}", app.url));
        assert!(!view["html"].as_str().unwrap().contains("<form"), "{view}");
        let tried = call_raw(
            &host,
            "app_widget_answer",
            json!({ "widget_id": id, "fields": fields }),
        )
        .await;
        assert_eq!(error_code(&tried), "not_answerable_here", "{tool}");
        let status = call(&host, "get_widget_status", json!({ "widget_id": id })).await;
        assert_eq!(status["status"], "pending", "{tool}");
    }
    host.cancel().await.unwrap();
}

/// A session whose host did not opt in (or a daemon whose operator did
/// not) takes no answer from the app: the question waits for the person.
#[tokio::test]
async fn no_answer_in_the_app_without_the_opt_in() {
    let defaults = spawn_app().await;
    let permissive = form_app().await;
    for app in [&defaults, &permissive] {
        let s = scene(app, "alice").await;
        let host = host(app, &s.agent, true, false).await;
        let made = call(&host, "ask", json!({ "question": "Deploy now?" })).await;
        let id = made["widget_id"].as_str().unwrap();
        let view = call(&host, "app_widget_view", json!({ "widget_id": id })).await;
        assert_eq!(view["answer_here"], false, "{view}");
        let tried = call_raw(
            &host,
            "app_widget_answer",
            json!({ "widget_id": id, "fields": [["answer.0", "Yes"]] }),
        )
        .await;
        assert_eq!(error_code(&tried), "in_client_answers_off");
        let status = call(&host, "get_widget_status", json!({ "widget_id": id })).await;
        assert_eq!(status["status"], "pending");
        host.cancel().await.unwrap();
    }
}

/// Another session's widget is not found through the app's tools.
#[tokio::test]
async fn the_app_sees_only_its_own_sessions_widgets() {
    let app = form_app().await;
    let alice = opted_in(&app, "alice").await;
    let bob = opted_in(&app, "bob").await;
    let alice_host = host(&app, &alice.agent, true, false).await;
    let bob_host = host(&app, &bob.agent, true, false).await;
    let made = call(&alice_host, "ask", json!({ "question": "Deploy now?" })).await;
    let id = made["widget_id"].as_str().unwrap();
    let seen = call_raw(&bob_host, "app_widget_view", json!({ "widget_id": id })).await;
    assert_eq!(error_code(&seen), "not_found");
    let tried = call_raw(
        &bob_host,
        "app_widget_answer",
        json!({ "widget_id": id, "fields": [["answer.0", "Yes"]] }),
    )
    .await;
    assert_eq!(error_code(&tried), "not_found");
    let status = call(&alice_host, "get_widget_status", json!({ "widget_id": id })).await;
    assert_eq!(status["status"], "pending");
}

/// Every question kind is drawn in the app by the transcript's own
/// templates, with its form (and an annotation's image inline, since the
/// document reaches no origin); the card's scripts are in the document.
#[tokio::test]
async fn every_question_kind_renders_in_the_app() {
    use base64::Engine as _;
    let app = form_app().await;
    let alice = opted_in(&app, "alice").await;
    let host = host(&app, &alice.agent, true, false).await;
    let image =
        base64::engine::general_purpose::STANDARD.encode(crate::helpers::samples::png(40, 30));
    let item = |id: &str| json!({ "id": id, "label": format!("Item {id}") });
    let clarify = |widget: Value| json!({ "question": "Which?", "widget": widget });
    let cases = [
        (
            "ask",
            json!({ "question": "Deploy now?" }),
            "widget-form ask",
        ),
        (
            "ask_user",
            json!({ "questions": [{ "question": "Which database?", "header": "DB", "options": [
                { "label": "Postgres" }, { "label": "SQLite" } ] }] }),
            "widget-form ask",
        ),
        (
            "ask_fields",
            json!({ "question": "Where is staging?", "fields": [
                { "name": "url", "label": "Staging URL", "type": "url" },
                { "name": "port", "label": "Port", "type": "integer", "min": 1, "max": 65535 } ] }),
            "widget-form fields",
        ),
        (
            "request_clarification",
            clarify(json!({ "type": "choice", "options": [{ "label": "A" }, { "label": "B" }] })),
            "type-choice",
        ),
        (
            "request_clarification",
            clarify(json!({ "type": "table",
                "columns": [{ "key": "name", "label": "Name" }, { "key": "owner", "label": "Owner", "editable": true }],
                "rows": [{ "name": "api", "owner": "alice" }] })),
            "type-table",
        ),
        (
            "request_clarification",
            clarify(
                json!({ "type": "mapping", "left": [item("a")], "right": [item("b"), item("c")] }),
            ),
            "type-mapping",
        ),
        (
            "request_clarification",
            clarify(json!({ "type": "curation", "items": [item("a"), item("b")] })),
            "type-curation",
        ),
        (
            "request_clarification",
            clarify(
                json!({ "type": "tree", "nodes": [item("a"), { "id": "b", "label": "B", "parent_id": "a" }],
                "allow_rename": true }),
            ),
            "type-tree",
        ),
        (
            "request_clarification",
            clarify(json!({ "type": "annotation", "image": image })),
            "type-annotation",
        ),
    ];
    for (tool, args, marker) in cases {
        let made = call(&host, tool, args).await;
        let id = made["widget_id"].as_str().unwrap();
        let view = call(&host, "app_widget_view", json!({ "widget_id": id })).await;
        assert_eq!(view["answer_here"], true, "{marker}: {view}");
        let html = view["html"].as_str().unwrap();
        assert!(
            html.contains("<form") && html.contains(marker),
            "{marker}: {html}"
        );
        if marker == "type-annotation" {
            let inline = view["image"].as_str().unwrap();
            assert!(inline.starts_with("data:image/"), "{inline:.40}");
        } else {
            assert!(view.get("image").is_none(), "{marker}");
        }
    }
    let html = document(&host).await;
    for script in [
        "type-table",
        "type-mapping",
        "type-curation",
        "type-tree",
        "type-annotation",
    ] {
        assert!(html.contains(script), "the document has {script}'s script");
    }
    host.cancel().await.unwrap();
}

/// The app answers only a question its own agent's tool call created and
/// showed in it (issue 61): the host's `ask`, `ask_fields` and clarification
/// `choice`, made over REST with its API token in the agent's session, are
/// shown without a form and refused (`not_offered_to_app`), and stay
/// pending. The agent's own call's question of each kind is answered once,
/// a second answer refused, and the prompt says the app answered, never
/// the user.
#[tokio::test]
async fn the_app_answers_only_its_own_calls_questions_and_once() {
    let app = form_app().await;
    let alice = opted_in(&app, "alice").await;
    let host = host(&app, &alice.agent, true, false).await;
    let cases = [
        (
            "ask",
            "ask",
            json!({ "question": "Deploy now?" }),
            json!([["answer.0", "Yes"]]),
            r#"[Agor] Answered in your MCP client's app (not by the user in widgetd): {"Deploy now?":"Yes"}"#,
        ),
        (
            "fields",
            "ask_fields",
            json!({ "question": "Which port?", "fields": [
                { "name": "port", "label": "Port", "type": "integer" } ] }),
            json!([["field.port", "8443"]]),
            r#"[Agor] Your question "Which port?" was answered in your MCP client's app, not by the user in widgetd: {"port":8443}"#,
        ),
        (
            "clarification",
            "request_clarification",
            json!({ "question": "Which region?", "widget": { "type": "choice",
                "options": [{ "label": "EU" }, { "label": "US" }] } }),
            json!([["selected", "EU"], ["freeform", ""]]),
            r#"[Agor] Your question "Which region?" was answered in your MCP client's app, not by the user in widgetd: {"structured":{"selected":["EU"]},"freeform":""}"#,
        ),
    ];
    for (kind, tool, body, fields, prompt) in cases {
        let hosts = created(ask(&app, &alice.host, &alice.session, kind, &body).await).await;
        let view = call(&host, "app_widget_view", json!({ "widget_id": hosts })).await;
        assert_eq!(view["answer_here"], false, "{kind}: {view}");
        assert!(!view["html"].as_str().unwrap().contains("<form"), "{view}");
        let answer = json!({ "widget_id": hosts, "fields": fields });
        let tried = call_raw(&host, "app_widget_answer", answer).await;
        assert_eq!(error_code(&tried), "not_offered_to_app", "{kind}");
        assert_eq!(widget_status(&app, &alice.host, &hosts).await, "pending");
        assert!(actors(&app, "widget.submit", &hosts).await.is_empty());

        let made = call(&host, tool, body).await;
        let own = made["widget_id"].as_str().unwrap();
        let view = call(&host, "app_widget_view", json!({ "widget_id": own })).await;
        assert_eq!(view["answer_here"], true, "{kind}: {view}");
        let answer = json!({ "widget_id": own, "fields": fields });
        let done = call(&host, "app_widget_answer", answer.clone()).await;
        assert_eq!(done["status"], "submitted", "{kind}: {done}");
        let again = call_raw(&host, "app_widget_answer", answer).await;
        assert_eq!(error_code(&again), "not_offered_to_app", "{kind}: once");
        assert_eq!(
            actors(&app, "widget.submit", own).await,
            vec![format!("mcp-app:{}", alice.session)]
        );
        assert_eq!(
            prompt_of(&app, &alice.host, &alice.session, own).await,
            prompt
        );
    }
}

/// A refused answer (a field the form does not have, a wrong value) leaves
/// the question answerable in the app, so the person can correct the form.
#[tokio::test]
async fn a_refused_answer_leaves_the_question_to_correct() {
    let app = form_app().await;
    let alice = opted_in(&app, "alice").await;
    let host = host(&app, &alice.agent, true, true).await;
    let made = call(
        &host,
        "ask_fields",
        json!({ "question": "Which port?", "fields": [
            { "name": "port", "label": "Port", "type": "integer", "min": 1, "max": 65535 } ] }),
    )
    .await;
    let id = made["widget_id"].as_str().unwrap();
    let wrong = json!({ "widget_id": id, "fields": [["field.port", "70000"]] });
    let refused = call_raw(&host, "app_widget_answer", wrong).await;
    assert_ne!(error_code(&refused), "not_offered_to_app");
    let right = json!({ "widget_id": id, "fields": [["field.port", "8443"]] });
    let done = call(&host, "app_widget_answer", right).await;
    assert_eq!(done["status"], "submitted", "{done}");
}

/// The document's policy allows its own inline scripts and stylesheet by
/// their SHA-256 hashes, never `'unsafe-inline'` (issue 61): a script, a
/// handler or a style attribute that got into a card would not run.
#[tokio::test]
async fn the_documents_policy_allows_its_own_scripts_by_hash_only() {
    use base64::Engine as _;
    use sha2::Digest as _;
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let host = host(&app, &s.agent, true, true).await;
    let html = document(&host).await;
    let policy = html
        .split("http-equiv=\"Content-Security-Policy\" content=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap();
    let directive = |name: &str| -> Vec<&str> {
        let found = policy
            .split(';')
            .map(str::trim)
            .find(|d| d.split_whitespace().next() == Some(name));
        let found = found.unwrap_or_else(|| panic!("no {name}: {policy}"));
        found.split_whitespace().skip(1).collect()
    };
    let hash = |text: &str| {
        let digest = sha2::Sha256::digest(text.as_bytes());
        format!(
            "'sha256-{}'",
            base64::engine::general_purpose::STANDARD.encode(digest)
        )
    };
    let blocks = |open: &str, close: &str| -> Vec<String> {
        html.split(open)
            .skip(1)
            .map(|block| hash(block.split(close).next().unwrap()))
            .collect()
    };
    assert_eq!(html.matches("<script").count(), 2, "two inline scripts");
    assert_eq!(directive("script-src"), blocks("<script>", "</script>"));
    assert_eq!(html.matches("<style").count(), 1, "one stylesheet");
    assert_eq!(directive("style-src"), blocks("<style>", "</style>"));
    assert!(!policy.contains("unsafe"), "{policy}");
    assert_eq!(directive("default-src"), ["'none'"]);
    host.cancel().await.unwrap();
}
