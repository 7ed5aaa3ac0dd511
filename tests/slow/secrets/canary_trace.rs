//! The real daemon at `RUST_LOG=trace`: values typed into an MCP form, by a
//! 2026-07-28 client (answers in a retry) and by a 2025-11-25 client (an
//! MCP session's `elicitation/create`), and a value submitted on the page,
//! never reach a log line. Refusals are logged in one line with their code.
//! An agent's markdown shown on a card does not flood the log.

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, FormElicitationCapability, Implementation,
    ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RequestContext};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::helpers::{
    COMMAND_LIMIT, Daemon, OutputWithin, canary, client, login_at, stderr, widgetd,
};

/// An MCP client that declares form elicitation and answers every form
/// with `answer`.
#[derive(Clone)]
struct Typist {
    answer: Value,
}

impl ClientHandler for Typist {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation =
            Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        ClientConfig::new(capabilities, Implementation::default())
    }

    async fn create_elicitation(
        &self,
        _: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(self.answer.clone()))
    }
}

/// Asks one question with an "Other" box over MCP; the client types `typed`
/// into it. Returns the tool's result.
async fn typed_into_a_form(url: &str, agent: &str, modern: bool, typed: &str) -> Value {
    let typist = Typist {
        answer: json!({ "other.0": typed }),
    };
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{url}/mcp"))
        .auth_header(agent.to_owned());
    let transport = StreamableHttpClientTransport::from_config(config);
    let client = if modern {
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        typist
            .serve_with_lifecycle(transport, lifecycle)
            .await
            .unwrap()
    } else {
        typist.serve(transport).await.unwrap()
    };
    let arguments = json!({ "questions": [{
        "question": "Which database?", "header": "DB",
        "options": [{ "label": "SQLite" }, { "label": "Postgres" }],
    }] });
    let result = client
        .call_tool(
            CallToolRequestParams::new("ask_user")
                .with_arguments(arguments.as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    let _ = client.cancel().await;
    result.structured_content.unwrap_or(Value::Null)
}

#[tokio::test]
async fn trace_logs_never_carry_a_value_over_either_mcp_generation() {
    let tmp = crate::helpers::test_dir();
    let data = tmp.path().join("data");
    let daemon = Daemon::start_with(&data, tmp.path(), "trace", &["--elicitation", "both"]);
    let url = daemon.url.clone();
    let minted = widgetd(&data)
        .args([
            "token", "create", "--user", "admin", "--scope", "sessions", "--json",
        ])
        .output_within(COMMAND_LIMIT);
    assert!(minted.status.success(), "{}", stderr(&minted));
    let host: Value = serde_json::from_slice(&minted.stdout).unwrap();
    let host = host["token"].as_str().unwrap().to_owned();
    let http = client();
    // A session whose host opted in to form mode for questions.
    let created: Value = http
        .post(format!("{url}/api/v1/sessions"))
        .bearer_auth(&host)
        .json(&json!({ "title": "trace", "elicitation": "form" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let agent = created["agent_token"].as_str().unwrap().to_owned();
    let session = created["session_id"].as_str().unwrap().to_owned();

    let mut secrets = Vec::new();
    for modern in [true, false] {
        let typed = canary(if modern { "trace-2026" } else { "trace-2025" });
        let body = typed_into_a_form(&url, &agent, modern, &typed).await;
        assert_eq!(body["status"], "submitted", "modern: {modern}: {body}");
        secrets.push(typed);
    }

    // A value typed on the page.
    let value = canary("trace-page");
    let r = http
        .post(format!("{url}/api/v1/sessions/{session}/widgets/env-vars"))
        .bearer_auth(&agent)
        .json(&json!({ "names": ["TRACE_KEY"], "reason": "to test the logs" }))
        .send()
        .await
        .unwrap();
    let widget = r.json::<Value>().await.unwrap()["widget_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let browser = login_at(&http, &url, "admin").await;
    let r = http
        .post(format!("{url}/widgets/{widget}/submit"))
        .header("cookie", &browser.cookie)
        .header("origin", &url)
        .form(&[
            ("csrf_token", browser.csrf.as_str()),
            ("value.TRACE_KEY", value.as_str()),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::SEE_OTHER);
    secrets.push(value);

    // A refusal: logged once, with its code.
    let r = http
        .get(format!("{url}/api/v1/widgets/{widget}"))
        .bearer_auth("wda_not-a-token")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::UNAUTHORIZED);

    let (out_log, err_log) = (daemon.out_log.clone(), daemon.err_log.clone());
    daemon.stop();
    let logs =
        std::fs::read_to_string(&out_log).unwrap() + &std::fs::read_to_string(&err_log).unwrap();
    assert!(logs.contains("TRACE"), "the daemon did not log at trace");
    for secret in &secrets {
        assert!(
            !logs.contains(secret.as_str()),
            "a log line carries a value"
        );
    }
    assert!(
        !logs.contains("InitializeRequestParams"),
        "rmcp logged a client's initialize"
    );
    let refused = logs
        .lines()
        .find(|l| l.contains("request refused") && l.contains("invalid_token"))
        .expect("the refusal is logged with its code");
    assert!(refused.contains("WARN"), "{refused}");
    assert!(refused.contains("/api/v1/widgets/{id}"), "{refused}");
    assert!(!refused.contains(&widget), "{refused}");
}

/// The size of the daemon's two logs, in bytes.
fn log_size(daemon: &Daemon) -> u64 {
    [&daemon.out_log, &daemon.err_log]
        .iter()
        .map(|log| std::fs::metadata(log).map_or(0, |m| m.len()))
        .sum()
}

/// A card of agent-written markdown viewed five times at `RUST_LOG=trace`:
/// the HTML parser under the markdown cleaner (html5ever) logged every
/// token, 11 MiB for these five views. Now widgetd's own lines only.
#[tokio::test]
async fn viewing_agent_markdown_at_trace_adds_little_to_the_log() {
    let tmp = crate::helpers::test_dir();
    let data = tmp.path().join("data");
    let daemon = Daemon::start(&data, tmp.path(), "markdown");
    let url = daemon.url.clone();
    let minted = widgetd(&data)
        .args([
            "token", "create", "--user", "admin", "--scope", "sessions", "--json",
        ])
        .output_within(COMMAND_LIMIT);
    assert!(minted.status.success(), "{}", stderr(&minted));
    let host: Value = serde_json::from_slice(&minted.stdout).unwrap();
    let http = client();
    let created: Value = http
        .post(format!("{url}/api/v1/sessions"))
        .bearer_auth(host["token"].as_str().unwrap())
        .json(&json!({ "title": "markdown" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let (agent, session) = (
        created["agent_token"].as_str().unwrap(),
        created["session_id"].as_str().unwrap(),
    );
    let line = "* **Open** the _settings_ page, copy `API_KEY` from [the console](https://example.com/keys) & paste it <here>\n";
    let instructions = line.repeat(4000 / line.len());
    let r = http
        .post(format!("{url}/api/v1/sessions/{session}/widgets/env-vars"))
        .bearer_auth(agent)
        .json(&json!({ "names": ["API_KEY"], "reason": "to call the API",
                       "instructions": instructions }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::CREATED);
    let widget = r.json::<Value>().await.unwrap()["widget_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let browser = login_at(&http, &url, "admin").await;

    let before = log_size(&daemon);
    for _ in 0..5 {
        let page = http
            .get(format!("{url}/widgets/{widget}"))
            .header("cookie", &browser.cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(page.status(), reqwest::StatusCode::OK);
        let html = page.text().await.unwrap();
        assert!(
            html.contains("<strong>Open</strong>"),
            "the markdown is rendered"
        );
    }
    let grown = log_size(&daemon) - before;
    let (err_log, out_log) = (daemon.err_log.clone(), daemon.out_log.clone());
    daemon.stop();
    let logs =
        std::fs::read_to_string(&out_log).unwrap() + &std::fs::read_to_string(&err_log).unwrap();
    assert!(
        logs.contains("request answered"),
        "the daemon did not log at trace"
    );
    assert!(
        grown < 64 * 1024,
        "five views of one card wrote {grown} bytes of log"
    );
}

/// Logs written to a file carry no colour codes; `--log-format json`
/// writes one JSON object per line, for log shippers.
#[tokio::test]
async fn logs_to_a_file_are_plain_text_or_json_lines() {
    let tmp = crate::helpers::test_dir();
    let data = tmp.path().join("data");
    let text = Daemon::start(&data, tmp.path(), "text");
    let (out, err) = (text.out_log.clone(), text.err_log.clone());
    text.stop();
    let logs = std::fs::read_to_string(&out).unwrap() + &std::fs::read_to_string(&err).unwrap();
    assert!(logs.contains("serving"), "{logs}");
    assert!(!logs.contains('\u{1b}'), "colour codes in a log file");

    let json = Daemon::start_with(&data, tmp.path(), "json", &["--log-format", "json"]);
    let err = json.err_log.clone();
    json.stop();
    let lines = std::fs::read_to_string(&err).unwrap();
    let mut messages = Vec::new();
    for line in lines.lines().filter(|l| !l.trim().is_empty()) {
        let event: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        for key in ["timestamp", "level", "target"] {
            assert!(event[key].is_string(), "{key} missing: {line}");
        }
        messages.push(event["message"].as_str().unwrap_or_default().to_owned());
    }
    assert!(messages.iter().any(|m| m == "serving"), "{lines}");
    assert!(messages.iter().any(|m| m == "stopped"), "{lines}");
}
