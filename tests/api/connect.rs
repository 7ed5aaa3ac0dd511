//! `widgetd connect CLIENT`: each client's snippet parses as that client's
//! format, has the shape its documentation gives, and refers to the token
//! through the environment unless told otherwise; a session the daemon does
//! not know, or a token that cannot work, is refused before anything is
//! printed.

use serde_json::Value;

use crate::helpers::{COMMAND_LIMIT, Scene, TestApp, scene, spawn_app, stderr, widgetd};

/// The daemon and a session of it, as `connect` checks them.
async fn daemon() -> (TestApp, Scene) {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    (app, s)
}

/// Runs the binary without blocking the runtime that serves the daemon it
/// talks to.
async fn output(command: std::process::Command) -> std::process::Output {
    crate::helpers::output_async_within(command, COMMAND_LIMIT).await
}

/// `widgetd connect CLIENT --json …` with the session's agent token in the
/// environment (or `token`): the files, by name.
async fn connect(
    app: &TestApp,
    s: &Scene,
    client: &str,
    extra: &[&str],
    token: Option<&str>,
) -> Vec<(String, String, String)> {
    let mut command = widgetd(&app.data_dir());
    command
        .args(["connect", client, "--session", &s.session, "--json"])
        .args(extra)
        .env("WIDGETD_URL", &app.url)
        .env("WIDGETD_AGENT_TOKEN", token.unwrap_or(&s.agent));
    let out = output(command).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let out: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out["client"], client);
    out["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let field = |n: &str| f[n].as_str().unwrap().to_owned();
            (field("file"), field("format"), field("text"))
        })
        .collect()
}

fn json_file(files: &[(String, String, String)], name: &str) -> Value {
    let (_, format, text) = files.iter().find(|f| f.0 == name).expect(name);
    assert_eq!(format, "json");
    serde_json::from_str(text).unwrap()
}

#[tokio::test]
async fn claude_code_gets_an_http_server_and_the_hooks_of_its_mode() {
    let (app, s) = daemon().await;
    let mcp_url = format!("{}/mcp", app.url);
    let files = connect(&app, &s, "claude-code", &[], None).await;
    let mcp = json_file(&files, ".mcp.json");
    let server = &mcp["mcpServers"]["widgetd"];
    assert_eq!(server["type"], "http");
    assert_eq!(server["url"], mcp_url);
    assert_eq!(
        server["headers"]["Authorization"],
        "Bearer ${WIDGETD_AGENT_TOKEN}"
    );
    let settings = json_file(&files, ".claude/settings.json");
    let hooks = &settings["hooks"];
    let endpoint = format!(
        "{}/api/v1/sessions/{}/hooks/claude-code",
        app.url, s.session
    );
    // Headless by default (`claude -p`, `widgetd host`): PreToolUse, since
    // PermissionRequest never fires there.
    assert!(hooks.get("PermissionRequest").is_none(), "{hooks}");
    let group = &hooks["PreToolUse"][0];
    let matcher = group["matcher"].as_str().unwrap();
    assert!(
        matcher.contains("Bash") && matcher.contains("(?!widgetd__)"),
        "{matcher}"
    );
    let permission = &group["hooks"][0];
    assert_eq!(permission["type"], "http");
    assert_eq!(permission["url"], format!("{endpoint}?wait=280"));
    assert_eq!(
        permission["headers"]["Authorization"],
        "Bearer $WIDGETD_AGENT_TOKEN"
    );
    assert_eq!(permission["allowedEnvVars"][0], "WIDGETD_AGENT_TOKEN");
    // widgetd answers before Claude Code gives up on the hook.
    assert!(permission["timeout"].as_u64().unwrap() > 280);
    for event in ["Notification", "Stop"] {
        assert_eq!(hooks[event][0]["hooks"][0]["url"], endpoint);
    }
    let all: String = files.iter().map(|f| f.2.clone()).collect();
    assert!(!all.contains(&s.agent));

    let files = connect(&app, &s, "claude-code", &["--hooks", "interactive"], None).await;
    let hooks = &json_file(&files, ".claude/settings.json")["hooks"];
    assert!(hooks.get("PreToolUse").is_none(), "{hooks}");
    let permission = &hooks["PermissionRequest"][0];
    assert!(permission.get("matcher").is_none());
    assert_eq!(
        permission["hooks"][0]["url"],
        format!("{endpoint}?wait=280")
    );

    // Without --json the output says which hooks it wrote.
    let mut command = widgetd(&app.data_dir());
    command
        .args(["connect", "claude-code", "--session", &s.session])
        .env("WIDGETD_URL", &app.url)
        .env("WIDGETD_AGENT_TOKEN", &s.agent);
    let out = output(command).await;
    assert!(out.status.success());
    assert!(
        stderr(&out).contains("PreToolUse hooks, for headless runs"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn codex_gets_toml_with_the_bearer_token_from_the_environment() {
    let (app, s) = daemon().await;
    let mcp_url = format!("{}/mcp", app.url);
    let files = connect(&app, &s, "codex", &[], None).await;
    let (file, format, text) = &files[0];
    assert_eq!(
        (file.as_str(), format.as_str()),
        ("~/.codex/config.toml", "toml")
    );
    let config: toml::Table = text.parse().unwrap();
    let server = &config["mcp_servers"]["widgetd"];
    assert_eq!(server["url"].as_str(), Some(mcp_url.as_str()));
    assert_eq!(
        server["bearer_token_env_var"].as_str(),
        Some("WIDGETD_AGENT_TOKEN")
    );
    // Codex's default (60 s) would cut short a call that waits for the person.
    let timeout = server["tool_timeout_sec"].as_integer().unwrap();
    assert!(
        timeout > widgetd_domain::widgets::MAX_WAIT_SECS as i64,
        "{timeout}"
    );
    // `codex exec` refuses an MCP call that needs approval.
    assert_eq!(
        server["default_tools_approval_mode"].as_str(),
        Some("approve")
    );

    let files = connect(&app, &s, "codex", &["--inline-token"], None).await;
    let config: toml::Table = files[0].2.parse().unwrap();
    let headers = &config["mcp_servers"]["widgetd"]["http_headers"];
    let bearer = format!("Bearer {}", s.agent);
    assert_eq!(headers["Authorization"].as_str(), Some(bearer.as_str()));
}

#[tokio::test]
async fn cursor_vscode_gemini_and_generic_get_their_own_shapes() {
    let (app, s) = daemon().await;
    let mcp_url = format!("{}/mcp", app.url);
    let cursor = json_file(
        &connect(&app, &s, "cursor", &[], None).await,
        ".cursor/mcp.json",
    );
    let server = &cursor["mcpServers"]["widgetd"];
    assert_eq!(server["url"], mcp_url);
    assert_eq!(
        server["headers"]["Authorization"],
        "Bearer ${env:WIDGETD_AGENT_TOKEN}"
    );

    let vscode = json_file(
        &connect(&app, &s, "vscode", &[], None).await,
        ".vscode/mcp.json",
    );
    let server = &vscode["servers"]["widgetd"];
    assert_eq!(
        (server["type"].as_str(), server["url"].as_str()),
        (Some("http"), Some(mcp_url.as_str()))
    );
    let input = &vscode["inputs"][0];
    assert_eq!(input["type"], "promptString");
    assert_eq!(input["password"], true);
    assert_eq!(
        server["headers"]["Authorization"],
        format!("Bearer ${{input:{}}}", input["id"].as_str().unwrap())
    );

    let gemini = json_file(
        &connect(&app, &s, "gemini", &[], None).await,
        "~/.gemini/settings.json",
    );
    let server = &gemini["mcpServers"]["widgetd"];
    // Without it `gemini -p` leaves widgetd's tools out.
    assert_eq!(server["trust"], true);
    assert_eq!(server["httpUrl"], mcp_url);
    assert_eq!(
        server["headers"]["Authorization"],
        "Bearer $WIDGETD_AGENT_TOKEN"
    );

    let generic = json_file(&connect(&app, &s, "generic", &[], None).await, "mcp.json");
    assert_eq!(generic["url"], mcp_url);
    assert_eq!(generic["transport"], "streamable-http");

    let inline = json_file(
        &connect(&app, &s, "gemini", &["--inline-token"], None).await,
        "~/.gemini/settings.json",
    );
    assert_eq!(
        inline["mcpServers"]["widgetd"]["headers"]["Authorization"],
        format!("Bearer {}", s.agent)
    );
}

#[tokio::test]
async fn connect_refuses_what_cannot_work_with_a_clear_message() {
    let (app, s) = daemon().await;
    let other = scene(&app, "bob").await;
    let run = async |args: &[&str], env: &[(&str, &str)]| {
        let mut command = widgetd(&app.data_dir());
        command
            .arg("connect")
            .args(args)
            .env("WIDGETD_URL", &app.url)
            .env_remove("WIDGETD_AGENT_TOKEN");
        for (name, value) in env {
            command.env(name, value);
        }
        let out = output(command).await;
        assert!(!out.status.success(), "{args:?} {env:?} was taken");
        assert!(out.stdout.is_empty(), "{args:?} printed a config");
        stderr(&out)
    };
    let agent = [("WIDGETD_AGENT_TOKEN", s.agent.as_str())];
    let unknown = uuid::Uuid::new_v4().to_string();
    let said = run(&["codex", "--session", &unknown], &agent).await;
    assert!(
        said.contains(&format!("has no session {unknown}")),
        "{said}"
    );
    // Another session's token: the hooks would answer nothing.
    let said = run(&["claude-code", "--session", &other.session], &agent).await;
    assert!(said.contains("has no session"), "{said}");
    let host = [("WIDGETD_TOKEN", s.host.as_str())];
    let said = run(&["codex", "--session", &unknown], &host).await;
    assert!(said.contains("WIDGETD_TOKEN"), "{said}");
    let said = run(&["codex", "--session", &s.session], &[]).await;
    assert!(said.contains("set WIDGETD_AGENT_TOKEN"), "{said}");
    let empty = [("WIDGETD_AGENT_TOKEN", "")];
    let said = run(
        &["codex", "--session", &s.session, "--inline-token"],
        &empty,
    )
    .await;
    assert!(said.contains("--inline-token"), "{said}");
    let said = run(&["codex", "--session", "not-a-session"], &agent).await;
    assert!(said.contains("is not a session id"), "{said}");
    let said = run(&["emacs", "--session", &s.session], &agent).await;
    assert!(said.contains("claude-code"), "{said}");
    let nowhere = [
        "codex",
        "--session",
        &s.session,
        "--url",
        "http://127.0.0.1:9",
    ];
    let said = run(&nowhere, &agent).await;
    assert!(
        said.contains("cannot reach widgetd at http://127.0.0.1:9"),
        "{said}"
    );
    // The API token of the creator is enough to check.
    let mut command = widgetd(&app.data_dir());
    command
        .args(["connect", "codex", "--session", &s.session])
        .env("WIDGETD_URL", &app.url)
        .env_remove("WIDGETD_AGENT_TOKEN")
        .env("WIDGETD_TOKEN", &s.host);
    let out = output(command).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("url = \"{}/mcp\"", app.url)),
        "{text}"
    );
}
