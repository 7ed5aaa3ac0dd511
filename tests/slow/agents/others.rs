//! Codex and Gemini CLI, the real ones, read the config `widgetd connect`
//! writes and reach widgetd's MCP server with the agent token from the
//! environment.

use std::process::Stdio;
use std::time::Duration;

use serde_json::json;

use super::fake_model::{FakeModel, Step};
use super::harness::{Workspace, cli, wait_bounded};
use super::{connect_files, widget_of};
use crate::helpers::{Scene, TestApp, scene, spawn_app, widgetd};

/// The config `widgetd connect CLIENT --session S --json` prints, written
/// where the client reads it.
async fn connected(client: &str) -> (TestApp, Scene, Workspace) {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let ws = Workspace::new();
    let mut command = widgetd(&app.data_dir());
    command
        .args(["connect", client, "--session", &s.session, "--json"])
        .env("WIDGETD_URL", &app.url)
        .env("WIDGETD_AGENT_TOKEN", &s.agent);
    let out = crate::helpers::output_async_within(command, crate::helpers::COMMAND_LIMIT).await;
    for (file, text) in connect_files(&out) {
        ws.write(&file, &text);
    }
    (app, s, ws)
}

/// Runs `program args` in the workspace (bounded to 90 s) on a thread, so
/// that the in-process daemon goes on answering; its stdout and stderr.
async fn run(
    ws: &Workspace,
    program: std::path::PathBuf,
    args: &[&str],
    agent: &str,
    extra: &[(&str, &str)],
) -> String {
    let mut command = ws.command(program, "http://127.0.0.1:9");
    command.envs(extra.iter().copied());
    command
        .args(args)
        .env("WIDGETD_AGENT_TOKEN", agent)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let what = format!("{args:?}");
    tokio::task::spawn_blocking(move || {
        let mut child = command.spawn().unwrap();
        let status = wait_bounded(&mut child, Duration::from_secs(90), &what);
        let out = child.wait_with_output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(status.success(), "{what} failed: {text}");
        text
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn codex_reads_the_server_from_its_config() {
    let codex = cli("codex");
    let (app, s, ws) = connected("codex").await;
    let out = run(
        &ws,
        codex,
        &["mcp", "get", "widgetd", "--json"],
        &s.agent,
        &[],
    )
    .await;
    let json = &out[out.find('{').expect(&out)..];
    let server: serde_json::Value = serde_json::Deserializer::from_str(json)
        .into_iter()
        .next()
        .expect(&out)
        .expect(&out);
    let transport = &server["transport"];
    assert_eq!(transport["type"], "streamable_http", "{server}");
    assert_eq!(transport["url"], format!("{}/mcp", app.url), "{server}");
    assert_eq!(transport["bearer_token_env_var"], "WIDGETD_AGENT_TOKEN");
    // Above the longest wait, so that Codex does not cut a waiting call.
    let timeout = server["tool_timeout_sec"]
        .as_f64()
        .expect("tool_timeout_sec");
    assert!(
        timeout > widgetd_domain::widgets::MAX_WAIT_SECS as f64,
        "{server}"
    );
}

#[tokio::test]
async fn gemini_cli_connects_with_the_token_from_the_environment() {
    let gemini = cli("gemini");
    let (_app, s, ws) = connected("gemini").await;
    trust_folder(&ws);
    let out = run(&ws, gemini, &["mcp", "list"], &s.agent, &[]).await;
    assert!(out.contains("widgetd"), "{out}");
    assert!(out.contains("Connected"), "{out}");
}

#[tokio::test]
async fn codex_exec_calls_widgetds_tools_with_the_connect_config() {
    let codex = cli("codex");
    let model = FakeModel::start().await;
    let (app, s, ws) = connected("codex").await;
    // The model: a provider entry pointing Codex at the fake, before the
    // `connect` snippet (top-level keys come before any table).
    let config = ws.home.join(".codex/config.toml");
    let snippet = std::fs::read_to_string(&config).unwrap();
    let provider = format!(
        "model = \"gpt-fake\"\nmodel_provider = \"fake\"\n\n[model_providers.fake]\n\
         name = \"fake\"\nbase_url = \"{}/v1\"\nenv_key = \"FAKE_MODEL_KEY\"\n\
         wire_api = \"responses\"\nsupports_websockets = false\n\n",
        model.url
    );
    std::fs::write(&config, provider + &snippet).unwrap();
    let ask = json!({ "names": ["DEMO_KEY"], "reason": "to call the demo API" });
    model.script([
        Step::tool("mcp__widgetd__request_env_vars", ask),
        Step::SayLastResult,
    ]);
    let args = ["exec", "--skip-git-repo-check", "Ask for DEMO_KEY"];
    let key = [("FAKE_MODEL_KEY", "fake-key-for-tests")];
    let out = run(&ws, codex, &args, &s.agent, &key).await;
    // `codex exec` approves nothing itself: the snippet's approval mode
    // lets widgetd's own tools through, and the card is there.
    widget_of(&app, &s.session, "env_vars", "pending", || Ok(())).await;
    assert!(out.contains("The tool said:"), "{out}");
    let result = model.tool_results().pop().expect("no tool result");
    assert!(result.contains("pending"), "{result}");
    assert_eq!(model.left(), 0);
}

/// Gemini CLI loads MCP servers only in a folder the person trusted (it
/// asks once, interactively); the answer is kept in this file.
fn trust_folder(ws: &Workspace) {
    let trusted = json!({ ws.project.to_str().unwrap(): "TRUST_FOLDER" });
    ws.write("~/.gemini/trustedFolders.json", &trusted.to_string());
}

#[tokio::test]
async fn gemini_cli_calls_widgetds_tools_with_the_connect_config() {
    let gemini = cli("gemini");
    let model = FakeModel::start().await;
    let (app, s, ws) = connected("gemini").await;
    trust_folder(&ws);
    // The model: an API key, and `GOOGLE_GEMINI_BASE_URL` for the fake.
    let settings = ws.home.join(".gemini/settings.json");
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    config["security"] = json!({ "auth": { "selectedType": "gemini-api-key" } });
    std::fs::write(&settings, config.to_string()).unwrap();
    let ask = json!({ "names": ["DEMO_KEY"], "reason": "to call the demo API" });
    model.script([
        Step::tool("mcp_widgetd_request_env_vars", ask),
        Step::SayLastResult,
    ]);
    let env = [
        ("GEMINI_API_KEY", "fake-key-for-tests"),
        ("GOOGLE_GEMINI_BASE_URL", model.url.as_str()),
    ];
    let out = run(&ws, gemini, &["-p", "Ask for DEMO_KEY"], &s.agent, &env).await;
    widget_of(&app, &s.session, "env_vars", "pending", || Ok(())).await;
    assert!(out.contains("The tool said:"), "{out}");
    let result = model.tool_results().pop().expect("no tool result");
    assert!(result.contains("pending"), "{result}");
    assert_eq!(model.left(), 0);
}
