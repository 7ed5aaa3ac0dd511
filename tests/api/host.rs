//! `widgetd host` against a live daemon, with a scripted agent: this test
//! binary itself, re-invoked as each turn's process (`scripted_agent`).

use std::io::Read;
use std::process::Stdio;
use std::time::Duration;

use reqwest::StatusCode;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use widgetd_domain::auth::Role;

use crate::helpers::{
    COMMAND_LIMIT, STOP_LIMIT, TestApp, canary, interrupt, kill_after, scene, spawn_app, widgetd,
};

/// Set in the host's environment so that the re-invoked test binary acts
/// as the agent (names starting with `WIDGETD_` do not reach a turn).
const AGENT_SWITCH: &str = "HOST_TEST_AGENT";

/// The scripted agent. Run by `widgetd host` as a turn: it reads its prompt
/// on stdin; without `DEMO_KEY` it asks for it over MCP with the agent token
/// from its environment and ends its turn; with it, it says it has it.
/// Asked to, it fails after asking. Run directly, it does nothing.
#[tokio::test]
async fn scripted_agent() {
    if std::env::var_os(AGENT_SWITCH).is_none() {
        return;
    }
    let mut prompt = String::new();
    std::io::stdin().read_to_string(&mut prompt).unwrap();
    println!("prompt: {}", prompt.trim());
    let leaked = std::env::var_os("WIDGETD_TOKEN").is_some();
    println!("host token visible: {leaked}");
    if let Ok(value) = std::env::var("DEMO_KEY") {
        println!("DEMO_KEY is here: {value}");
        return;
    }
    let url = std::env::var("WIDGETD_MCP_URL").unwrap();
    let token = std::env::var("WIDGETD_AGENT_TOKEN").unwrap();
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
    let client = ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
    let arguments = json!({ "names": ["DEMO_KEY"], "reason": "to call the demo API" });
    let serde_json::Value::Object(arguments) = arguments else {
        unreachable!()
    };
    let result = client
        .call_tool(CallToolRequestParams::new("request_env_vars").with_arguments(arguments))
        .await
        .unwrap();
    let status = &result.structured_content.unwrap()["status"];
    println!("asked for DEMO_KEY: {status}");
    if prompt.contains("then fail") {
        std::process::exit(3);
    }
}

/// `widgetd host … -- <this test binary as the scripted agent>`.
fn host(app: &TestApp, token: &str, args: &[&str]) -> tokio::process::Command {
    let mut command = widgetd(&app.data_dir());
    command
        .arg("host")
        .args(["--url", &app.url])
        .args(args)
        .arg("--")
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", "host::scripted_agent", "--nocapture", "--quiet"])
        .env("WIDGETD_TOKEN", token)
        .env(AGENT_SWITCH, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    tokio::process::Command::from(command)
}

/// Polls the database until `sql` (one `?`, the session) finds a row.
async fn eventually(app: &TestApp, sql: &str, session: &str) -> String {
    for _ in 0..1200 {
        let found: Option<String> = sqlx::query_scalar(sql)
            .bind(session)
            .fetch_optional(&app.state.db.read)
            .await
            .unwrap();
        if let Some(found) = found {
            return found;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("nothing found for {sql}");
}

async fn transcript(app: &TestApp, session: &str) -> Vec<(String, String)> {
    sqlx::query_as(
        "SELECT role, body FROM messages WHERE session_id = $1 AND kind = 'text' ORDER BY id",
    )
    .bind(session)
    .fetch_all(&app.state.db.read)
    .await
    .unwrap()
}

#[tokio::test]
async fn host_runs_turns_until_the_key_arrives_masked() {
    let app = spawn_app().await;
    let alice = app.user("alice", Role::Member).await;
    let token = app.token(&alice, "sessions,env:read").await;
    let mut child = host(
        &app,
        &token,
        &[
            "--title",
            "Host test",
            "--prompt",
            "Ask for DEMO_KEY, then fail",
        ],
    )
    .spawn()
    .unwrap();
    let watchdog = kill_after(
        child.id().unwrap(),
        Duration::from_secs(120),
        "widgetd host: two turns, the second after the key arrives",
    );
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = stderr.next_line().await.unwrap().unwrap();
    let session = first
        .split("session ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("{first}"))
        .to_owned();
    assert!(
        first.contains(&format!("{}/sessions/{session}", app.url)),
        "{first}"
    );

    let widget = eventually(
        &app,
        "SELECT id FROM widgets WHERE session_id = $1 AND status = 'pending'",
        &session,
    )
    .await;
    let value = canary("host");
    let browser = app.login("alice").await;
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{widget}/submit"),
            &[("value.DEMO_KEY", &value), ("scope", "session")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    eventually(
        &app,
        "SELECT body FROM messages WHERE session_id = $1 AND body LIKE '%DEMO_KEY is here%'",
        &session,
    )
    .await;
    interrupt(&child);
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .await
        .unwrap();
    let mut rest = Vec::new();
    while let Some(line) = stderr.next_line().await.unwrap() {
        rest.push(line);
    }
    drop(watchdog);
    let status = tokio::time::timeout(STOP_LIMIT, child.wait())
        .await
        .expect("widgetd host did not exit after SIGINT")
        .unwrap();
    assert!(status.success(), "{rest:?}");
    assert!(rest.iter().any(|l| l.contains("exit code 3")), "{rest:?}");

    assert!(
        out.contains("DEMO_KEY is here: <concealed by widgetd>"),
        "{out}"
    );
    let lines = transcript(&app, &session).await;
    let text: String = lines.iter().map(|(r, b)| format!("{r}: {b}\n")).collect();
    assert!(!out.contains(&value) && !text.contains(&value), "{text}");
    assert_eq!(
        lines[0],
        ("user".into(), "Ask for DEMO_KEY, then fail".into())
    );
    assert!(
        text.contains("prompt: Ask for DEMO_KEY, then fail\nhost token visible: false"),
        "{text}"
    );
    assert!(text.contains("asked for DEMO_KEY: \"pending\""), "{text}");
    assert!(
        text.contains("system: The agent's turn ended with exit code 3."),
        "{text}"
    );
    assert!(
        text.contains("prompt: [Agor] User submitted DEMO_KEY (scope: session)."),
        "{text}"
    );
    assert!(
        text.contains("DEMO_KEY is here: <concealed by widgetd>"),
        "{text}"
    );
    assert!(!text.contains("host token visible: true"), "{text}");
    assert!(app.prompts(&token, &session, 0).await.is_empty());
}

#[tokio::test]
async fn a_prompt_whose_turn_never_started_comes_again_after_a_restart() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let widget = app
        .pending_widget(&s.agent, &s.session, &["LATER_KEY"])
        .await;
    let browser = app.login("alice").await;
    let r = app
        .post_form(&browser, &format!("/widgets/{widget}/dismiss"), &[])
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);

    let resume = |program: &str| {
        let mut command = widgetd(&app.data_dir());
        command
            .args(["host", "--url", &app.url, "--session", &s.session, "--"])
            .args([program, "-c", "cat; echo; echo turn-done"])
            .env("WIDGETD_TOKEN", &s.host)
            .env("WIDGETD_AGENT_TOKEN", &s.agent)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        tokio::process::Command::from(command)
    };
    let failed = tokio::time::timeout(COMMAND_LIMIT, resume("/no/such/agent").output())
        .await
        .expect("widgetd host with an agent it cannot run did not exit")
        .unwrap();
    assert!(!failed.status.success());
    let said = String::from_utf8_lossy(&failed.stderr);
    assert!(said.contains("cannot run `/no/such/agent`"), "{said}");
    assert_eq!(app.prompts(&s.host, &s.session, 0).await.len(), 1);

    let child = resume("sh").spawn().unwrap();
    let delivered = eventually(
        &app,
        "SELECT body FROM messages WHERE session_id = $1 AND body LIKE '%turn-done%'",
        &s.session,
    )
    .await;
    interrupt(&child);
    let stopped = tokio::time::timeout(STOP_LIMIT, child.wait_with_output())
        .await
        .expect("widgetd host did not exit after SIGINT")
        .unwrap();
    assert!(stopped.status.success());
    assert!(
        delivered.starts_with("[Agor] User dismissed the request for LATER_KEY."),
        "{delivered}"
    );
    assert!(app.prompts(&s.host, &s.session, 0).await.is_empty());
}

#[tokio::test]
async fn a_host_restarted_on_its_session_needs_only_its_api_token() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let browser = app.login("alice").await;
    let run = |agent_token: Option<&str>| {
        let mut command = widgetd(&app.data_dir());
        command
            .args(["host", "--url", &app.url, "--session", &s.session, "--"])
            .args([
                "sh",
                "-c",
                "cat; echo; test -n \"$WIDGETD_AGENT_TOKEN\" && echo turn-done",
            ])
            .env("WIDGETD_TOKEN", &s.host)
            .env_remove("WIDGETD_AGENT_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(token) = agent_token {
            command.env("WIDGETD_AGENT_TOKEN", token);
        }
        tokio::process::Command::from(command)
    };
    // Never shown the agent token; then handed one that no longer works.
    let rounds = [
        (None, "issued session"),
        (Some("wda_revoked"), "does not work"),
    ];
    for (round, (given, says)) in rounds.into_iter().enumerate() {
        let name = format!("KEY_{round}");
        let widget = app.pending_widget(&s.host, &s.session, &[&name]).await;
        let r = app
            .post_form(&browser, &format!("/widgets/{widget}/dismiss"), &[])
            .await;
        assert_eq!(r.status(), StatusCode::SEE_OTHER);
        let child = run(given).spawn().unwrap();
        let done = format!(
            "SELECT body FROM messages WHERE session_id = $1 AND body LIKE '%{name}%turn-done%'"
        );
        eventually(&app, &done, &s.session).await;
        interrupt(&child);
        let out = child.wait_with_output().await.unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(err.contains(says), "{err}");
        assert!(!err.contains("--agent-token"), "{err}");
    }
    // The new tokens were issued, audited, and the first one stopped working.
    let reissued = app
        .count("SELECT COUNT(*) FROM audit_log WHERE action = 'session.revoke_agent_token'")
        .await;
    assert_eq!(reissued, 2);
    let check = format!("/api/v1/sessions/{}/hooks/claude-code", s.session);
    assert_eq!(
        app.get(&check, &s.agent).await.status(),
        StatusCode::UNAUTHORIZED
    );
}
