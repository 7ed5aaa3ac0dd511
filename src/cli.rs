//! The command line: every command takes `--data-dir` / `WIDGETD_DATA_DIR`
//! (and `--database-url` / `WIDGETD_DATABASE_URL`), every listing `--json`.

mod accounts;
mod agent_args;
mod agents;
mod checks;
mod commands;
mod data;
mod sessions;
mod slack;
mod vault;

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use widgetd_domain::auth::Role;
use widgetd_domain::db::DatabaseUrl;
use widgetd_domain::sessions::Elicitation;

pub use agent_args::{ConnectArgs, ExecArgs, HostArgs};

pub use checks::default_public_url;
pub use commands::run;
pub use slack::SlackCommand;

/// The data dir when none is given: a per-user one, so that running widgetd
/// from a source checkout does not put keys and values inside it. A
/// `widgetd-data` in the working directory, the default of earlier
/// versions, is still used, so an upgrade does not start from scratch.
fn default_data_dir() -> PathBuf {
    let legacy = PathBuf::from("widgetd-data");
    if legacy.is_dir() {
        return legacy;
    }
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(data_home) = non_empty("XDG_DATA_HOME") {
        return PathBuf::from(data_home).join("widgetd");
    }
    match non_empty("HOME") {
        Some(home) => PathBuf::from(home).join(".local/share/widgetd"),
        None => legacy,
    }
}

fn parse_database_url(text: &str) -> Result<DatabaseUrl, String> {
    DatabaseUrl::parse(text).map_err(|e| e.to_string())
}

/// Lets AI agents ask people for input through inline widgets, and keeps
/// the secrets people type out of the model.
#[derive(Debug, Parser)]
#[command(name = "widgetd", version)]
pub struct Cli {
    /// Where widgetd keeps its database and master key file. Default:
    /// `$XDG_DATA_HOME/widgetd` (else `~/.local/share/widgetd`), or
    /// `./widgetd-data` where that already exists (earlier versions' default).
    #[arg(
        long,
        env = "WIDGETD_DATA_DIR",
        default_value_os_t = default_data_dir(),
        hide_default_value = true,
        global = true
    )]
    pub data_dir: PathBuf,
    /// The database: `sqlite://PATH` or `postgres://USER@HOST/DB` (several
    /// daemons on one PostgreSQL database). Default: the SQLite file
    /// `widgetd.db` in the data dir. The master key stays outside the
    /// database either way: the data dir's key file or `WIDGETD_MASTER_KEY`.
    #[arg(long, env = "WIDGETD_DATABASE_URL", global = true, value_parser = parse_database_url)]
    pub database_url: Option<DatabaseUrl>,
    /// How log lines (on stderr) are written: `text`, coloured only on a
    /// terminal, or `json`, one object per line for log shippers.
    #[arg(
        long,
        env = "WIDGETD_LOG_FORMAT",
        value_enum,
        default_value = "text",
        global = true
    )]
    pub log_format: crate::logging::LogFormat,
    /// With no command, widgetd serves.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// `serve`'s arguments when no command is given: from the environment or
/// their defaults.
#[derive(Debug, Parser)]
struct DefaultServe {
    #[command(flatten)]
    args: ServeArgs,
}

impl ServeArgs {
    /// The arguments `widgetd` alone serves with.
    pub fn from_env() -> Self {
        DefaultServe::parse_from(["widgetd"]).args
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the daemon (the default command).
    Serve(ServeArgs),
    /// Add users, change passwords, list users.
    #[command(subcommand)]
    User(UserCommand),
    /// Mint, list and revoke API tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Create, list and archive agent sessions; revoke their agent tokens.
    #[command(subcommand)]
    Session(SessionCommand),
    /// Set, delete and list a user's env vars (values are never printed).
    #[command(subcommand)]
    Env(EnvCommand),
    /// Inspect and rotate encryption keys.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// List and verify the tamper-evident audit log.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Connect the deployment to a Slack app, show or end the connection.
    #[command(subcommand)]
    Slack(SlackCommand),
    /// Run a command with a session's env vars, masking them in its output.
    Exec(ExecArgs),
    /// Host a headless agent CLI turn by turn: the first prompt, then one
    /// turn per resume prompt.
    Host(HostArgs),
    /// Print the MCP (and hooks) config for an agent client.
    Connect(ConnectArgs),
    /// Check the data dir: the database file, every data key, every stored
    /// secret (decrypted and dropped, never shown) and the audit chain.
    /// Exits 1 when anything is wrong, saying what to do next.
    Check {
        /// `quick_check` instead of `integrity_check`: skips comparing each
        /// index with its table, much faster on a large database.
        #[arg(long)]
        quick: bool,
        /// Print the report as JSON on standard output.
        #[arg(long)]
        json: bool,
    },
    /// Move a deployment to another database (SQLite to PostgreSQL, or
    /// back).
    #[command(subcommand)]
    Db(DbCommand),
    /// Write a consistent copy of the live database to PATH.
    Backup {
        /// A file that does not exist yet.
        path: PathBuf,
    },
    /// Make a backup the data dir's database, once it checks out with its
    /// master key (every value decrypts, the audit chain verifies).
    Restore {
        /// A file written by `widgetd backup`.
        backup: PathBuf,
        /// The master key file of the backup's time; copied into the data
        /// dir (unless WIDGETD_MASTER_KEY is set). Default: the data dir's key.
        #[arg(long)]
        key_file: Option<PathBuf>,
        /// Restore over a data dir that has a database: stop widgetd first;
        /// the present files are moved aside (`widgetd.db.before-restore-…`).
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "WIDGETD_BIND", default_value = "127.0.0.1:7700")]
    pub bind: SocketAddr,
    /// URL that agents and browsers use to reach this daemon (default: http://BIND).
    #[arg(long, env = "WIDGETD_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Tag that opens every resume prompt.
    #[arg(long, env = "WIDGETD_PROMPT_TAG", default_value = widgetd_domain::prompts::DEFAULT_TAG)]
    pub prompt_tag: String,
    /// Seconds a widget stays pending before it expires (default 7 days).
    #[arg(long, env = "WIDGETD_WIDGET_TTL_SECS", default_value_t = 7 * 24 * 3600)]
    pub widget_ttl_secs: u64,
    /// Seconds between sweeps for expired widgets.
    #[arg(long, env = "WIDGETD_SWEEP_SECS", default_value_t = 30)]
    pub sweep_secs: u64,
    /// Extra Host names (comma-separated) that every route answers to
    /// (`/healthz` and `/readyz` answer any); loopback and the public URL's
    /// host are always allowed. Compared without the port.
    #[arg(long, env = "WIDGETD_MCP_ALLOWED_HOSTS", value_delimiter = ',')]
    pub mcp_allowed_hosts: Vec<String>,
    /// Which MCP elicitation modes /mcp may use with a client that declares
    /// them: `url` (request_env_vars sends the person to the widget's own
    /// page; the default), `form` (questions answered in the agent's MCP
    /// client, which holds the agent token: only in sessions created with
    /// `"elicitation": "form"` or `"both"`), `both` or `off` (every answer
    /// in the transcript). Approvals are never answered in a form.
    #[arg(long, env = "WIDGETD_ELICITATION", value_parser = texts::<Elicitation>(Elicitation::TEXTS), default_value = "url")]
    pub elicitation: Elicitation,
    /// Let webhooks go to loopback, private, link-local and other
    /// non-public addresses (refused by default: a member could otherwise
    /// reach services inside the daemon's network).
    #[arg(long, env = "WIDGETD_WEBHOOKS_ALLOW_PRIVATE")]
    pub webhooks_allow_private: bool,
    /// Reverse proxies (addresses or CIDR ranges, comma-separated) whose
    /// forwarding header (`--forwarded-header`) names the client, for the
    /// audit log and the login rate limits. From any other address the
    /// header is ignored. Default: none (the TCP peer is the client).
    #[arg(long, env = "WIDGETD_TRUSTED_PROXIES", value_delimiter = ',', value_parser = crate::forwarded::IpRange::parse)]
    pub trusted_proxies: Vec<crate::forwarded::IpRange>,
    /// The one header the trusted proxies set: `x-forwarded-for` (nginx,
    /// Caddy, Traefik, HAProxy, cloud load balancers) or `forwarded` (RFC
    /// 7239, for a proxy that sets it). The other header is ignored
    /// entirely. Read right to left: the first address that is not a
    /// trusted proxy is the client, so what a client wrote itself at the
    /// left is never reached.
    #[arg(
        long,
        env = "WIDGETD_FORWARDED_HEADER",
        value_enum,
        default_value = "x-forwarded-for"
    )]
    pub forwarded_header: crate::forwarded::ForwardedHeader,
    /// For tests only: the Slack Web API's base URL (a loopback fake).
    #[arg(long, env = "WIDGETD_SLACK_API_BASE", hide = true, default_value = widgetd_notify::slack::API_BASE)]
    pub slack_api_base: String,
    /// Run the built-in demo agent: creates the user `demo` and a demo
    /// session and walks through each widget. Only on an empty data dir
    /// (or one an earlier --demo made).
    #[arg(long)]
    pub demo: bool,
}

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Add a user. Without --password-stdin a random password is printed once.
    Add {
        name: String,
        #[arg(long, value_parser = texts::<Role>(Role::TEXTS), default_value = "member")]
        role: Role,
        /// Read the password from standard input (one line).
        #[arg(long)]
        password_stdin: bool,
    },
    /// Set a user's password. Without --password-stdin a random one is printed once.
    Passwd {
        name: String,
        #[arg(long)]
        password_stdin: bool,
    },
    /// List users.
    List {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Mint an API token; it is printed once and only its hash is kept.
    Create {
        /// The user the token acts as.
        #[arg(long)]
        user: String,
        /// Comma-separated: sessions, env:read, env:write.
        #[arg(long)]
        scope: String,
        /// Print `{"token": …, "id": …}`.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token by its id (from `token create` or `token list`).
    Revoke { id: String },
    /// List tokens (ids, users, scopes; never the tokens).
    List {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// Create a session; prints `{session_id, agent_token, mcp_url}`.
    Create {
        /// The user who owns the session and its env vars.
        #[arg(long)]
        user: String,
        #[arg(long)]
        title: Option<String>,
        /// URL the daemon is reached at, for `mcp_url`.
        #[arg(
            long,
            env = "WIDGETD_PUBLIC_URL",
            default_value = "http://127.0.0.1:7700"
        )]
        public_url: String,
    },
    /// List every session, newest first (owner, state, pending requests).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Archive a session: its agent token stops working, its waiting
    /// requests are cancelled (the agent is told), nothing more is added.
    Archive {
        /// The session id (from `session list`).
        id: String,
        /// Print `{session_id, archived, cancelled_widgets}`.
        #[arg(long)]
        json: bool,
        /// URL the daemon is reached at, for the links in webhook notices.
        #[arg(
            long,
            env = "WIDGETD_PUBLIC_URL",
            default_value = "http://127.0.0.1:7700"
        )]
        public_url: String,
        /// Tag that opens the cancelled requests' resume prompts (as `serve`).
        #[arg(long, env = "WIDGETD_PROMPT_TAG", default_value = widgetd_domain::prompts::DEFAULT_TAG)]
        prompt_tag: String,
    },
    /// Revoke a session's agent token without archiving the session; with
    /// --reissue, print a new one (shown only this once).
    RevokeAgentToken {
        /// The session id (from `session list`).
        id: String,
        /// Issue a new agent token in the same step.
        #[arg(long)]
        reissue: bool,
        /// Print `{session_id, revoked, agent_token, mcp_url}`.
        #[arg(long)]
        json: bool,
        /// URL the daemon is reached at, for `mcp_url`.
        #[arg(
            long,
            env = "WIDGETD_PUBLIC_URL",
            default_value = "http://127.0.0.1:7700"
        )]
        public_url: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum EnvCommand {
    /// Set NAME from standard input, byte for byte (use `printf %s`, not `echo`,
    /// unless the value should end with a newline).
    Set {
        name: String,
        #[arg(long)]
        user: String,
        /// Set it for one session instead of globally.
        #[arg(long)]
        session: Option<String>,
    },
    /// Delete NAME.
    Delete {
        name: String,
        #[arg(long)]
        user: String,
        #[arg(long)]
        session: Option<String>,
    },
    /// List a user's env var names, scopes and provenance.
    List {
        #[arg(long)]
        user: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Data keys and how many values each encrypts.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Create a new data key; new writes use it, old values stay readable.
    Rotate,
    /// Replace the master key: rewraps the data keys only. Stop the daemon first.
    Rekey {
        /// Read the new master key (base64 of 32 bytes) from standard input
        /// instead of generating one.
        #[arg(long)]
        new_key_stdin: bool,
    },
    /// Re-encrypt every value still under an older data key with the newest.
    Reencrypt,
}

#[derive(Debug, Subcommand)]
pub enum DbCommand {
    /// Copy every row from one database into another, empty one, then
    /// check row counts and the audit chain. Ciphertexts move as they are:
    /// no key is needed, and the daemons using the new database need the
    /// same master key. Stop the daemons first.
    Copy {
        /// The database to copy: `sqlite://PATH` or `postgres://…`.
        #[arg(long, value_parser = parse_database_url)]
        from: DatabaseUrl,
        /// The empty database to fill: `sqlite://PATH` or `postgres://…`.
        #[arg(long, value_parser = parse_database_url)]
        to: DatabaseUrl,
        /// Print what was copied as JSON on standard output.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Audit rows, oldest first.
    List {
        /// Only rows at or after this time (RFC 3339, e.g. 2026-11-22T00:00:00Z).
        #[arg(long)]
        since: Option<String>,
        /// Only rows about this session.
        #[arg(long)]
        session: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Check the hash chain; exits non-zero naming the first bad row.
    Verify,
}

/// A domain enum read from one of its texts (`Role::TEXTS`), which
/// `--help` lists.
fn texts<T>(texts: &'static [&'static str]) -> impl clap::builder::TypedValueParser<Value = T>
where
    T: std::str::FromStr<Err = String> + Clone + Send + Sync + 'static,
{
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(texts).try_map(|text| text.parse::<T>())
}
