//! `widgetd connect CLIENT`: the config snippet that points an agent client
//! at `/mcp` as a session's agent, and for Claude Code the hooks that bring
//! its permission prompts to the browser. The bearer token is referred to
//! through `WIDGETD_AGENT_TOKEN` (as `widgetd host` sets it), never written
//! in unless asked.

use serde_json::{Value, json};

/// The environment variable the snippets take the agent token from.
pub const TOKEN_VAR: &str = "WIDGETD_AGENT_TOKEN";

/// Seconds the Claude Code permission hook waits for the person; below the
/// hook's own timeout so that widgetd answers first.
pub const HOOK_WAIT_SECS: u64 = 280;
const HOOK_TIMEOUT_SECS: u64 = 300;

/// The agent clients there are snippets for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    ClaudeCode,
    Codex,
    Cursor,
    Vscode,
    Gemini,
    Generic,
}

/// How a snippet is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Toml,
}

/// One file's worth of config.
#[derive(Debug)]
pub struct Snippet {
    /// Where the client reads it, relative to the project or home folder.
    pub file: &'static str,
    pub format: Format,
    /// The text to put in that file (merged with what is there).
    pub text: String,
}

/// What the snippets point at.
pub struct Target<'a> {
    /// The daemon's public URL, without a trailing `/`.
    pub url: &'a str,
    pub session: &'a str,
    /// The agent token to write in; none to refer to [`TOKEN_VAR`].
    pub inline_token: Option<&'a str>,
}

impl Target<'_> {
    fn mcp_url(&self) -> String {
        format!("{}/mcp", self.url)
    }

    /// The token as the client's own interpolation syntax spells it.
    fn token(&self, reference: &str) -> String {
        self.inline_token.unwrap_or(reference).to_owned()
    }
}

/// The snippets for `client`, in the order to apply them.
pub fn snippets(client: Client, target: &Target) -> Vec<Snippet> {
    let json = |file, value: Value| Snippet {
        file,
        format: Format::Json,
        text: serde_json::to_string_pretty(&value).expect("JSON serializes"),
    };
    match client {
        Client::ClaudeCode => vec![
            json(".mcp.json", claude_code_mcp(target)),
            json(".claude/settings.json", claude_code_hooks(target)),
        ],
        Client::Codex => vec![Snippet {
            file: "~/.codex/config.toml",
            format: Format::Toml,
            text: codex(target),
        }],
        Client::Cursor => vec![json(".cursor/mcp.json", cursor(target))],
        Client::Vscode => vec![json(".vscode/mcp.json", vscode(target))],
        Client::Gemini => vec![json("~/.gemini/settings.json", gemini(target))],
        Client::Generic => vec![json("mcp.json", generic(target))],
    }
}

fn bearer(token: String) -> Value {
    json!({ "Authorization": format!("Bearer {token}") })
}

fn claude_code_mcp(t: &Target) -> Value {
    json!({ "mcpServers": { "widgetd": {
        "type": "http",
        "url": t.mcp_url(),
        "headers": bearer(t.token(&format!("${{{TOKEN_VAR}}}"))),
    }}})
}

/// Permission prompts become approval widgets; notifications and the end
/// of each turn become transcript lines.
fn claude_code_hooks(t: &Target) -> Value {
    let endpoint = format!("{}/api/v1/sessions/{}/hooks/claude-code", t.url, t.session);
    let hook = |url: String, timeout: u64| {
        let mut hook = json!({
            "type": "http",
            "url": url,
            "headers": bearer(t.token(&format!("${TOKEN_VAR}"))),
            "timeout": timeout,
        });
        if t.inline_token.is_none() {
            hook["allowedEnvVars"] = json!([TOKEN_VAR]);
        }
        json!([{ "hooks": [hook] }])
    };
    json!({ "hooks": {
        "PermissionRequest": hook(format!("{endpoint}?wait={HOOK_WAIT_SECS}"), HOOK_TIMEOUT_SECS),
        "Notification": hook(endpoint.clone(), 10),
        "Stop": hook(endpoint, 10),
    }})
}

fn codex(t: &Target) -> String {
    let quote = |s: &str| Value::from(s).to_string();
    let auth = match t.inline_token {
        Some(token) => format!(
            "http_headers = {{ Authorization = {} }}",
            quote(&format!("Bearer {token}"))
        ),
        None => format!("bearer_token_env_var = {}", quote(TOKEN_VAR)),
    };
    format!(
        "[mcp_servers.widgetd]\nurl = {}\n{auth}\n",
        quote(&t.mcp_url())
    )
}

fn cursor(t: &Target) -> Value {
    json!({ "mcpServers": { "widgetd": {
        "url": t.mcp_url(),
        "headers": bearer(t.token(&format!("${{env:{TOKEN_VAR}}}"))),
    }}})
}

/// VS Code documents `${input:…}` for secrets: it asks once and keeps the
/// token in its secret storage.
fn vscode(t: &Target) -> Value {
    let server = json!({
        "type": "http",
        "url": t.mcp_url(),
        "headers": bearer(t.token("${input:widgetd-agent-token}")),
    });
    if t.inline_token.is_some() {
        return json!({ "servers": { "widgetd": server } });
    }
    json!({
        "inputs": [{
            "type": "promptString",
            "id": "widgetd-agent-token",
            "description": "widgetd agent token (wda_…)",
            "password": true,
        }],
        "servers": { "widgetd": server },
    })
}

fn gemini(t: &Target) -> Value {
    json!({ "mcpServers": { "widgetd": {
        "httpUrl": t.mcp_url(),
        "headers": bearer(t.token(&format!("${TOKEN_VAR}"))),
    }}})
}

fn generic(t: &Target) -> Value {
    json!({
        "transport": "streamable-http",
        "url": t.mcp_url(),
        "headers": bearer(t.token(&format!("<value of {TOKEN_VAR}>"))),
        "session_id": t.session,
    })
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Json => "json",
            Self::Toml => "toml",
        }
    }
}

impl Client {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
            Self::Cursor => "cursor",
            Self::Vscode => "vscode",
            Self::Gemini => "gemini",
            Self::Generic => "generic",
        }
    }
}
