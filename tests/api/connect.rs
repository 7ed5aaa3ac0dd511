//! `widgetd connect CLIENT`: each client's snippet parses as that client's
//! format, has the shape its documentation gives, and refers to the token
//! through the environment unless told otherwise.

use serde_json::Value;

use crate::helpers::{COMMAND_LIMIT, OutputWithin};
use crate::helpers::{stderr, widgetd};

const SESSION: &str = "6f1c9a52-3f0e-4c2b-9d6e-0a1b2c3d4e5f";
const URL: &str = "https://widgetd.example.com";
const MCP: &str = "https://widgetd.example.com/mcp";

/// `widgetd connect CLIENT --json …`: the files, by name.
fn connect(client: &str, extra: &[&str], token: Option<&str>) -> Vec<(String, String, String)> {
    let dir = tempfile::tempdir().unwrap();
    let mut command = widgetd(dir.path());
    command
        .args([
            "connect",
            client,
            "--session",
            SESSION,
            "--url",
            URL,
            "--json",
        ])
        .args(extra)
        .env_remove("WIDGETD_AGENT_TOKEN");
    if let Some(token) = token {
        command.env("WIDGETD_AGENT_TOKEN", token);
    }
    let out = command.output_within(COMMAND_LIMIT);
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

#[test]
fn claude_code_gets_an_http_server_and_the_hooks() {
    let files = connect("claude-code", &[], Some("wda_not-to-be-printed"));
    let mcp = json_file(&files, ".mcp.json");
    let server = &mcp["mcpServers"]["widgetd"];
    assert_eq!(server["type"], "http");
    assert_eq!(server["url"], MCP);
    assert_eq!(
        server["headers"]["Authorization"],
        "Bearer ${WIDGETD_AGENT_TOKEN}"
    );
    let settings = json_file(&files, ".claude/settings.json");
    let hooks = &settings["hooks"];
    let endpoint = format!("{URL}/api/v1/sessions/{SESSION}/hooks/claude-code");
    let permission = &hooks["PermissionRequest"][0]["hooks"][0];
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
    assert!(!all.contains("wda_not-to-be-printed"));
}

#[test]
fn codex_gets_toml_with_the_bearer_token_from_the_environment() {
    let files = connect("codex", &[], None);
    let (file, format, text) = &files[0];
    assert_eq!(
        (file.as_str(), format.as_str()),
        ("~/.codex/config.toml", "toml")
    );
    let config: toml::Table = text.parse().unwrap();
    let server = &config["mcp_servers"]["widgetd"];
    assert_eq!(server["url"].as_str(), Some(MCP));
    assert_eq!(
        server["bearer_token_env_var"].as_str(),
        Some("WIDGETD_AGENT_TOKEN")
    );

    let files = connect("codex", &["--inline-token"], Some("wda_in\"line"));
    let config: toml::Table = files[0].2.parse().unwrap();
    let headers = &config["mcp_servers"]["widgetd"]["http_headers"];
    assert_eq!(
        headers["Authorization"].as_str(),
        Some("Bearer wda_in\"line")
    );
}

#[test]
fn cursor_vscode_gemini_and_generic_get_their_own_shapes() {
    let cursor = json_file(&connect("cursor", &[], None), ".cursor/mcp.json");
    let server = &cursor["mcpServers"]["widgetd"];
    assert_eq!(server["url"], MCP);
    assert_eq!(
        server["headers"]["Authorization"],
        "Bearer ${env:WIDGETD_AGENT_TOKEN}"
    );

    let vscode = json_file(&connect("vscode", &[], None), ".vscode/mcp.json");
    let server = &vscode["servers"]["widgetd"];
    assert_eq!(
        (server["type"].as_str(), server["url"].as_str()),
        (Some("http"), Some(MCP))
    );
    let input = &vscode["inputs"][0];
    assert_eq!(input["type"], "promptString");
    assert_eq!(input["password"], true);
    assert_eq!(
        server["headers"]["Authorization"],
        format!("Bearer ${{input:{}}}", input["id"].as_str().unwrap())
    );

    let gemini = json_file(&connect("gemini", &[], None), "~/.gemini/settings.json");
    let server = &gemini["mcpServers"]["widgetd"];
    assert_eq!(server["httpUrl"], MCP);
    assert_eq!(
        server["headers"]["Authorization"],
        "Bearer $WIDGETD_AGENT_TOKEN"
    );

    let generic = json_file(&connect("generic", &[], None), "mcp.json");
    assert_eq!(generic["url"], MCP);
    assert_eq!(generic["transport"], "streamable-http");

    let inline = json_file(
        &connect("gemini", &["--inline-token"], Some("wda_x")),
        "~/.gemini/settings.json",
    );
    assert_eq!(
        inline["mcpServers"]["widgetd"]["headers"]["Authorization"],
        "Bearer wda_x"
    );
}

#[test]
fn connect_refuses_what_it_cannot_do() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        widgetd(dir.path())
            .arg("connect")
            .args(args)
            .env_remove("WIDGETD_AGENT_TOKEN")
            .output_within(COMMAND_LIMIT)
    };
    let out = run(&["codex", "--session", SESSION, "--inline-token"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("WIDGETD_AGENT_TOKEN"),
        "{}",
        stderr(&out)
    );
    let out = run(&["codex", "--session", "not-a-session"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("is not a session id"),
        "{}",
        stderr(&out)
    );
    let out = run(&["emacs", "--session", SESSION]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("claude-code"), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
}
