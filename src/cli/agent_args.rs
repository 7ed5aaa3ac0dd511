//! The arguments of the commands that run beside an agent: `exec` (a
//! command with a session's values), `host` (the agent's turns) and
//! `connect` (an agent client's config).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The session whose effective env to use.
    #[arg(long)]
    pub session: String,
    /// Where widgetd listens.
    #[arg(long, env = "WIDGETD_URL", default_value = "http://127.0.0.1:7700")]
    pub url: String,
    /// An API token with the env:read scope.
    #[arg(long, env = "WIDGETD_TOKEN", hide_env_values = true)]
    pub token: String,
    /// Print values as they are instead of masking them.
    #[arg(long)]
    pub no_masking: bool,
    /// Run even if some values cannot be decrypted, without them (they are
    /// named on stderr). Without it such a session's env is refused.
    #[arg(long)]
    pub partial: bool,
    /// The command and its arguments.
    #[arg(last = true, required = true)]
    pub command: Vec<OsString>,
}

#[derive(Debug, Args)]
pub struct HostArgs {
    /// Go on with this session (the one `widgetd connect --session` wrote
    /// the hooks for) instead of creating one.
    #[arg(long)]
    pub session: Option<String>,
    /// The new session's title.
    #[arg(long, conflicts_with = "session")]
    pub title: Option<String>,
    /// The first turn's prompt (default: read from standard input, for a
    /// new session; none when going on with one).
    #[arg(long)]
    pub prompt: Option<String>,
    /// Where widgetd listens.
    #[arg(long, env = "WIDGETD_URL", default_value = "http://127.0.0.1:7700")]
    pub url: String,
    /// An API token with the sessions and env:read scopes.
    #[arg(long, env = "WIDGETD_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Read the API token from this file instead.
    #[arg(long, conflicts_with = "token")]
    pub token_file: Option<PathBuf>,
    /// The agent token of `--session`. When it is not given, or no longer
    /// works for that session, the host issues the session a new one with
    /// its API token (audited; the previous agent token stops working).
    #[arg(long, env = "WIDGETD_AGENT_TOKEN", hide_env_values = true)]
    pub agent_token: Option<String>,
    /// The agent's command; `{prompt}` in it is replaced by the turn's
    /// prompt, else the prompt goes on its standard input.
    #[arg(last = true, required = true)]
    pub command: Vec<OsString>,
}

#[derive(Debug, Args)]
pub struct ConnectArgs {
    /// The agent client to configure.
    #[arg(value_enum)]
    pub client: crate::connect::Client,
    /// The session the agent works in; `connect` checks with the daemon
    /// that it exists (with WIDGETD_AGENT_TOKEN, else WIDGETD_TOKEN).
    #[arg(long)]
    pub session: String,
    /// Where widgetd listens, as the agent reaches it.
    #[arg(long, env = "WIDGETD_URL", default_value = "http://127.0.0.1:7700")]
    pub url: String,
    /// Claude Code only: the hooks for how it will run — `headless`
    /// (`claude -p`, `widgetd host`: PreToolUse) or `interactive` (`claude`
    /// in a terminal: PermissionRequest).
    #[arg(long, value_enum, default_value = "headless")]
    pub hooks: crate::connect::HookMode,
    /// Write the agent token (from WIDGETD_AGENT_TOKEN) into the config
    /// itself instead of referring to that environment variable.
    #[arg(long)]
    pub inline_token: bool,
    /// The session's agent token: checked against the session, and written
    /// in with `--inline-token`.
    #[arg(long, env = "WIDGETD_AGENT_TOKEN", hide_env_values = true)]
    pub agent_token: Option<String>,
    /// An API token of the session's creator (scope `sessions`), to check
    /// the session when no agent token is given.
    #[arg(long, env = "WIDGETD_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Write the config into its files (relative to the working directory;
    /// `~/…` to the home folder) instead of printing it: JSON is merged
    /// into what is there (widgetd's earlier entries replaced); a TOML file
    /// that already has `[mcp_servers.widgetd]` is left alone.
    #[arg(long, conflicts_with = "json")]
    pub write: bool,
    /// Print `{"client", "session_id", "hooks", "files": [{"file", "format", "text"}]}`.
    #[arg(long)]
    pub json: bool,
}
