//! The domain's shared state: what widgets, sessions, secrets, prompts,
//! access checks, the CLI and the background jobs work with. It knows
//! nothing of HTTP; the HTTP layer's state (`lib.rs`) holds a `Core` and
//! derefs to it, so a handler passes `&state` where the domain takes
//! `&Core`.
//!
//! The test at the end holds the line: no domain file names the HTTP
//! layer's state, its routers or its extractors.

use crate::crypto::Keyring;
use crate::db::{Backend, Db, Stamp};
use crate::events::Hub;
use crate::{auth, forwarded, prompts, sessions, slack, widgets};

/// The database, the keyring, the settings, the event hub, the auth cache
/// and the widget rows kept in memory: everything the domain needs, shared
/// as `Arc<Core>` by whoever must own it (background jobs, the demo agent,
/// spawned acknowledgements).
pub struct Core {
    pub db: Db,
    pub keyring: Keyring,
    pub settings: Settings,
    pub hub: Hub,
    /// Who tokens, users and sessions are, checked against the auth epoch.
    pub auth_cache: auth::AuthCache,
    /// Widget rows read, checked against the database's stamp.
    pub widget_rows: widgets::RowCache,
}

impl Core {
    pub fn new(db: Db, keyring: Keyring, mut settings: Settings) -> Self {
        // Names only, also for rmcp's own check of `/mcp` (an entry without
        // a port matches any port there too), so both checks agree.
        for entry in &mut settings.mcp_allowed_hosts {
            *entry = host_name(entry.trim()).to_ascii_lowercase();
        }
        Self {
            db,
            keyring,
            settings,
            hub: Hub::default(),
            auth_cache: auth::AuthCache::default(),
            widget_rows: widgets::RowCache::default(),
        }
    }

    /// The database's stamp for the current request (`db/changes.rs`),
    /// taken before reading what is to be kept under it. On SQLite the
    /// poll's; on PostgreSQL the one read with the auth epoch, by a read
    /// that started after the request arrived. `None`: read the database.
    pub async fn stamp(&self) -> Option<Stamp> {
        match self.db.backend() {
            Backend::Sqlite => self.db.stamp().await,
            Backend::Postgres => self.auth_cache.epoch(&self.db).await.stamp(),
        }
    }
}

/// The daemon's settings. Holds no secret.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The URL people and agents reach this daemon at, without trailing `/`.
    pub public_url: String,
    /// The tag that opens every resume prompt.
    pub prompt_tag: String,
    /// How long a widget stays pending before it expires.
    pub widget_ttl_ms: i64,
    /// Host names every route answers to (`--mcp-allowed-hosts`, with
    /// loopback and the public URL's name). Compared without the port: a
    /// proxy's `Host: $host` drops it, and DNS rebinding is about names.
    pub mcp_allowed_hosts: Vec<String>,
    /// The first webhook retry waits this long; later ones longer.
    pub webhook_retry_base_ms: i64,
    /// The MCP elicitation modes `/mcp` may use (`serve --elicitation`).
    pub elicitation: sessions::Elicitation,
    /// Whether webhooks may go to loopback, private and link-local
    /// addresses (`serve --webhooks-allow-private`).
    pub webhooks_allow_private: bool,
    /// Reverse proxies whose `Forwarded` / `X-Forwarded-For` is believed
    /// (`serve --trusted-proxies`); empty: the TCP peer is the client.
    pub trusted_proxies: Vec<forwarded::IpRange>,
    /// The Slack Web API, `https://slack.com/api`; another only in tests
    /// (`serve --slack-api-base`, hidden), which point it at a fake.
    pub slack_api_base: String,
}

impl Settings {
    /// Defaults for a daemon reached at `public_url`.
    pub fn new(public_url: impl Into<String>) -> Self {
        let public_url = public_url.into().trim_end_matches('/').to_owned();
        let mut hosts = vec![
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
        ];
        if let Some(host) = public_url
            .split("://")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
        {
            hosts.push(host_name(host).to_owned());
        }
        Self {
            public_url,
            prompt_tag: prompts::DEFAULT_TAG.to_owned(),
            widget_ttl_ms: 7 * 24 * 3600 * 1000,
            mcp_allowed_hosts: hosts,
            webhook_retry_base_ms: 5000,
            elicitation: sessions::Elicitation::Url,
            webhooks_allow_private: false,
            trusted_proxies: Vec::new(),
            slack_api_base: slack::API_BASE.to_owned(),
        }
    }

    /// `scheme://host[:port]` of the public URL, as browsers send in `Origin`.
    pub fn public_origin(&self) -> &str {
        let after_scheme = self.public_url.find("://").map_or(0, |i| i + 3);
        let end = self.public_url[after_scheme..]
            .find('/')
            .map_or(self.public_url.len(), |i| after_scheme + i);
        &self.public_url[..end]
    }
}

/// The name of `name`, `name:port`, `[v6]`, `[v6]:port` or a bare IPv6
/// address.
pub(crate) fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or_default();
    }
    match host.rsplit_once(':') {
        // More than one colon and no brackets: a bare IPv6 address.
        Some((name, _)) if !name.contains(':') => name,
        _ => host,
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    /// The domain: these files and directories. Within them, HTTP lives
    /// only in files named `api.rs` or under a directory `api/`.
    const DOMAIN: &[&str] = &[
        "src/core.rs",
        "src/access.rs",
        "src/demo.rs",
        "src/limits.rs",
        "src/input.rs",
        "src/auth",
        "src/audit",
        "src/cli",
        "src/cli.rs",
        "src/crypto",
        "src/db",
        "src/events",
        "src/prompts",
        "src/secrets",
        "src/sessions",
        "src/transcript",
        "src/transcript.rs",
        "src/widgets",
        "src/hooks/decide.rs",
        "src/webhooks/delivery.rs",
        "src/slack/delivery.rs",
    ];

    /// What only the HTTP layer may name: its state, routers, handler
    /// extractors, its shared pieces (`crate::api`) and the MCP server.
    const HTTP: &[&str] = &[
        "AppState",
        "crate::api",
        "axum::routing",
        "axum::Router",
        "Router<",
        "extract::State",
        "crate::mcp",
        "State(",
    ];

    fn is_http_file(path: &Path) -> bool {
        path.file_name().is_some_and(|n| n == "api.rs")
            || path.components().any(|c| c.as_os_str() == "api")
    }

    fn rust_files(path: &Path, out: &mut Vec<PathBuf>) {
        if path.is_dir() {
            let mut entries: Vec<_> = std::fs::read_dir(path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
                .map(|e| e.unwrap().path())
                .collect();
            entries.sort();
            for entry in entries {
                rust_files(&entry, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") && !is_http_file(path) {
            out.push(path.to_owned());
        }
    }

    /// `file:line: word` for each line of `source` that names the HTTP
    /// layer, up to its unit tests.
    fn offences(file: &str, source: &str) -> Vec<String> {
        let mut found = Vec::new();
        for (n, line) in source.lines().enumerate() {
            if line == "#[cfg(test)]" && source.lines().nth(n + 1) == Some("mod tests {") {
                break;
            }
            for word in HTTP {
                if line.contains(word) {
                    found.push(format!("{file}:{}: {word}", n + 1));
                }
            }
        }
        found
    }

    #[test]
    fn the_domain_does_not_name_the_http_layer() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        for entry in DOMAIN {
            let path = root.join(entry);
            assert!(path.exists(), "{entry} is listed as domain but is gone");
            rust_files(&path, &mut files);
        }
        assert!(files.len() > 50, "only {} domain files found", files.len());
        let mut found = Vec::new();
        for file in &files {
            let source = std::fs::read_to_string(file).unwrap();
            let name = file.strip_prefix(root).unwrap().display().to_string();
            found.extend(offences(&name, &source));
        }
        assert!(
            found.is_empty(),
            "domain code names the HTTP layer (move it to an `api.rs`, or take `&Core`):\n{}",
            found.join("\n")
        );
    }

    #[test]
    fn the_check_sees_a_handler_and_spares_api_files() {
        let handler = "use crate::AppState;\nasync fn get(State(state): State<AppState>) {}";
        assert_eq!(
            offences("x.rs", handler).len(),
            3,
            "{:?}",
            offences("x.rs", handler)
        );
        assert!(offences("x.rs", "pub async fn get(state: &Core) {}").is_empty());
        assert_eq!(offences("x.rs", "use crate::api::ApiJson;").len(), 1);
        assert!(offences("x.rs", "use crate::input::parse_json;").is_empty());
        let tested = "fn f() {}\n#[cfg(test)]\nmod tests {\n    use crate::AppState;\n}";
        assert!(offences("x.rs", tested).is_empty());
        assert!(is_http_file(Path::new("src/widgets/api/respond.rs")));
        assert!(is_http_file(Path::new("src/sessions/api.rs")));
        assert!(!is_http_file(Path::new("src/widgets/engine.rs")));
    }
}
