//! `widgetd connect CLIENT`: the config snippet that points an agent client
//! at `/mcp` as a session's agent, and for Claude Code the hooks that bring
//! its permission prompts to the browser. The bearer token is referred to
//! through `WIDGETD_AGENT_TOKEN` (as `widgetd host` sets it), never written
//! in unless asked.

use serde_json::{Value, json};

/// The environment variable the snippets take the agent token from.
pub const TOKEN_VAR: &str = "WIDGETD_AGENT_TOKEN";

/// Seconds the Claude Code permission hook waits for the person; below the
/// hook's own timeout so that widgetd answers first (were Claude Code to
/// give up first, it would fall back to its own rules, which run read-only
/// commands without asking anyone).
pub const HOOK_WAIT_SECS: u64 = 280;
const HOOK_TIMEOUT_SECS: u64 = 300;

/// Seconds Codex waits for one tool call: above the longest `wait_seconds`
/// (Codex's own default, 60 s, would cut a waiting call short).
pub const CODEX_TOOL_TIMEOUT_SECS: u64 = widgetd_domain::widgets::MAX_WAIT_SECS + 30;

/// The tools whose calls the headless hooks bring to the browser: the ones
/// Claude Code asks permission for, and every other MCP server's tools.
/// widgetd's own tools (`mcp__widgetd__…`) are left out: a card in front of
/// "ask the person" would ask twice. A JavaScript regular expression, as
/// Claude Code reads a matcher with characters other than letters, digits,
/// `_` and `|`.
pub const PRE_TOOL_USE_MATCHER: &str =
    "^(Bash|Edit|Write|MultiEdit|NotebookEdit|WebFetch|WebSearch|mcp__(?!widgetd__).*)$";

/// How Claude Code will be run, which decides the hook that sees its
/// permission checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HookMode {
    /// `claude -p` (as `widgetd host` runs it): `PreToolUse`, because
    /// `PermissionRequest` never fires without a dialog to show.
    #[default]
    Headless,
    /// `claude` in a terminal: `PermissionRequest`, which fires exactly
    /// when Claude Code would show its permission dialog.
    Interactive,
}

impl HookMode {
    /// What the hooks do, in a line for the person running `connect`.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Headless => {
                "PreToolUse hooks, for headless runs (`claude -p`, `widgetd host`): every call \
                 of Bash, Edit, Write, WebFetch and other servers' MCP tools waits for the \
                 person; use `--hooks interactive` for `claude` in a terminal"
            }
            Self::Interactive => {
                "PermissionRequest hooks, for `claude` in a terminal: each permission dialog \
                 goes to the browser; they never fire under `claude -p` (use `--hooks headless`)"
            }
        }
    }
}

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
    /// Which Claude Code hooks to write.
    pub hooks: HookMode,
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

/// Permission checks become approval widgets (which hook sees them depends
/// on the mode); notifications and the end of each turn become transcript
/// lines.
fn claude_code_hooks(t: &Target) -> Value {
    let endpoint = format!("{}/api/v1/sessions/{}/hooks/claude-code", t.url, t.session);
    let hook = |url: String, timeout: u64, matcher: Option<&str>| {
        let mut hook = json!({
            "type": "http",
            "url": url,
            "headers": bearer(t.token(&format!("${TOKEN_VAR}"))),
            "timeout": timeout,
        });
        if t.inline_token.is_none() {
            hook["allowedEnvVars"] = json!([TOKEN_VAR]);
        }
        let mut group = json!({ "hooks": [hook] });
        if let Some(matcher) = matcher {
            group["matcher"] = json!(matcher);
        }
        json!([group])
    };
    let waiting = format!("{endpoint}?wait={HOOK_WAIT_SECS}");
    let permission = match t.hooks {
        HookMode::Headless => (
            "PreToolUse",
            hook(waiting, HOOK_TIMEOUT_SECS, Some(PRE_TOOL_USE_MATCHER)),
        ),
        HookMode::Interactive => ("PermissionRequest", hook(waiting, HOOK_TIMEOUT_SECS, None)),
    };
    let mut hooks = serde_json::Map::new();
    hooks.insert(permission.0.to_owned(), permission.1);
    hooks.insert("Notification".to_owned(), hook(endpoint.clone(), 10, None));
    hooks.insert("Stop".to_owned(), hook(endpoint, 10, None));
    json!({ "hooks": hooks })
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
    // `approve`: widgetd's tools only ask the person, and `codex exec`
    // (approval policy `never`) refuses an MCP call that needs approval.
    format!(
        "[mcp_servers.widgetd]\nurl = {}\n{auth}\ntool_timeout_sec = {CODEX_TOOL_TIMEOUT_SECS}\n\
         default_tools_approval_mode = \"approve\"\n",
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

/// `trust`: widgetd's tools only ask the person, and without it Gemini CLI
/// leaves a server's tools out of a non-interactive run (`gemini -p`).
fn gemini(t: &Target) -> Value {
    json!({ "mcpServers": { "widgetd": {
        "httpUrl": t.mcp_url(),
        "headers": bearer(t.token(&format!("${TOKEN_VAR}"))),
        "trust": true,
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

/// `snippet` merged into `existing` (a file's JSON): objects key by key,
/// and for an array (Claude Code's hook groups) the entries widgetd wrote
/// before (those naming a widgetd URL) are replaced, the rest kept.
pub fn merge_json(existing: Value, snippet: Value, url: &str) -> Value {
    match (existing, snippet) {
        (Value::Object(mut old), Value::Object(new)) => {
            for (key, value) in new {
                let merged = match old.remove(&key) {
                    Some(before) => merge_json(before, value, url),
                    None => value,
                };
                old.insert(key, merged);
            }
            Value::Object(old)
        }
        (Value::Array(old), Value::Array(new)) => {
            let ours = |entry: &Value| entry.to_string().contains(url);
            let mut kept: Vec<Value> = old.into_iter().filter(|e| !ours(e)).collect();
            kept.extend(new);
            Value::Array(kept)
        }
        (_, snippet) => snippet,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_keeps_what_is_there_and_replaces_what_widgetd_wrote() {
        let url = "http://127.0.0.1:7700";
        let existing = json!({
            "model": "x",
            "mcpServers": { "other": { "command": "o" }, "widgetd": { "url": "old" } },
            "hooks": { "PreToolUse": [
                { "matcher": "Edit", "hooks": [{ "type": "command", "command": "fmt" }] },
                { "hooks": [{ "type": "http", "url": format!("{url}/api/v1/sessions/a/hooks/claude-code") }] },
            ] },
        });
        let snippet = json!({
            "mcpServers": { "widgetd": { "url": format!("{url}/mcp") } },
            "hooks": { "PreToolUse": [
                { "hooks": [{ "type": "http", "url": format!("{url}/api/v1/sessions/b/hooks/claude-code") }] },
            ] },
        });
        let merged = merge_json(existing, snippet, url);
        assert_eq!(merged["model"], "x");
        assert_eq!(merged["mcpServers"]["other"]["command"], "o");
        assert_eq!(merged["mcpServers"]["widgetd"]["url"], format!("{url}/mcp"));
        let groups = merged["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0]["matcher"], "Edit");
        assert!(groups[1].to_string().contains("sessions/b/"));
    }
}
