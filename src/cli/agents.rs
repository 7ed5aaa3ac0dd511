//! The commands for the agents people already run: `widgetd host` and
//! `widgetd connect`.

use std::io::Read;

use anyhow::{Context, bail};
use secrecy::SecretString;
use serde_json::json;

use super::{ConnectArgs, HostArgs};
use crate::connect::{self, Client};
use crate::exec;
use crate::host::{self as agent_host, HostOptions};
use widgetd_domain::ids::SessionId;

/// `widgetd host`: the token from `--token`/`WIDGETD_TOKEN` or a file, the
/// first prompt from `--prompt` or standard input.
pub async fn host(args: HostArgs) -> anyhow::Result<i32> {
    let token = match (args.token, &args.token_file) {
        (_, Some(path)) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the token file {}", path.display()))?
            .trim()
            .to_owned(),
        (Some(token), None) => token,
        (None, None) => bail!("give an API token in WIDGETD_TOKEN or with --token-file"),
    };
    if let Some(session) = &args.session {
        SessionId::parse(session).with_context(
            || "--session takes a session id (a UUID, as `widgetd session list` shows)",
        )?;
    }
    let agent_token = args
        .agent_token
        .filter(|t| !t.trim().is_empty())
        .map(SecretString::from);
    let resume = args.session.map(|id| (id, agent_token));
    let prompt = match args.prompt {
        Some(prompt) => Some(prompt),
        None if resume.is_none() => {
            let mut prompt = String::new();
            std::io::stdin()
                .read_to_string(&mut prompt)
                .context("cannot read the first prompt from standard input")?;
            let prompt = prompt.trim().to_owned();
            anyhow::ensure!(
                !prompt.is_empty(),
                "give the first prompt with --prompt or on standard input"
            );
            Some(prompt)
        }
        None => None,
    };
    agent_host::run(HostOptions {
        url: args.url,
        token: SecretString::from(token),
        resume,
        title: args.title,
        prompt,
        command: args.command,
    })
    .await
}

/// `widgetd connect`: checks the session with the daemon, then prints each
/// snippet under its file name, or all as JSON.
pub async fn connect(args: ConnectArgs) -> anyhow::Result<()> {
    let agent_token = args.agent_token.as_deref().filter(|t| !t.trim().is_empty());
    if args.inline_token && agent_token.is_none() {
        bail!(
            "--inline-token writes the session's agent token into the config: set \
             WIDGETD_AGENT_TOKEN to it (it is empty or unset)"
        );
    }
    SessionId::parse(&args.session).with_context(|| {
        format!(
            "`{}` is not a session id (a UUID, as `widgetd session list` shows)",
            args.session.escape_default()
        )
    })?;
    let url = args.url.trim_end_matches('/');
    check_session(url, &args.session, agent_token, args.token.as_deref()).await?;
    let target = connect::Target {
        url,
        session: &args.session,
        inline_token: agent_token.filter(|_| args.inline_token),
        hooks: args.hooks,
    };
    let snippets = connect::snippets(args.client, &target);
    let claude = args.client == Client::ClaudeCode;
    if args.json {
        let files: Vec<_> = snippets
            .iter()
            .map(|s| json!({ "file": s.file, "format": s.format.as_str(), "text": s.text }))
            .collect();
        let mut out =
            json!({ "client": args.client.name(), "session_id": args.session, "files": files });
        if claude {
            out["hooks"] = json!(args.hooks);
        }
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    if claude {
        eprintln!("# {}", args.hooks.describe());
    }
    if args.write {
        for snippet in &snippets {
            write_snippet(snippet, url)?;
        }
        return Ok(());
    }
    // File names go to stderr, so that one snippet can be redirected as is.
    for snippet in snippets {
        eprintln!("# {} (merge into what is there):", snippet.file);
        println!("{}", snippet.text);
    }
    Ok(())
}

/// Refuses a session the daemon does not know, asking with the agent token
/// (which must then be that session's) or else the creator's API token.
async fn check_session(
    url: &str,
    session: &str,
    agent_token: Option<&str>,
    api_token: Option<&str>,
) -> anyhow::Result<()> {
    let (token, whose) = match (agent_token, api_token.filter(|t| !t.trim().is_empty())) {
        (Some(token), _) => (token, "the agent token in WIDGETD_AGENT_TOKEN"),
        (None, Some(token)) => (token, "the API token in WIDGETD_TOKEN"),
        (None, None) => bail!(
            "connect checks session {session} with widgetd at {url}: set WIDGETD_AGENT_TOKEN \
             to the session's agent token, or WIDGETD_TOKEN to an API token of its creator \
             (scope `sessions`)"
        ),
    };
    let client = exec::http_client()?;
    let check = format!("{url}/api/v1/sessions/{session}/hooks/claude-code");
    let response = client
        .get(&check)
        .bearer_auth(token)
        .send()
        .await
        .with_context(|| {
            format!("cannot reach widgetd at {url} (--url / WIDGETD_URL); is `widgetd serve` running there?")
        })?;
    match response.status().as_u16() {
        200 => Ok(()),
        401 => bail!("widgetd at {url} does not accept {whose}: it is unknown or revoked"),
        404 => bail!(
            "widgetd at {url} has no session {session} for {whose}; `widgetd session list` \
             shows the sessions, and each session's agent token belongs to it alone"
        ),
        _ => bail!(
            "widgetd at {url} refused to check session {session}: {}",
            exec::refusal(response).await
        ),
    }
}

/// Writes (or merges) one snippet into its file.
fn write_snippet(snippet: &connect::Snippet, url: &str) -> anyhow::Result<()> {
    let path = match snippet.file.strip_prefix("~/") {
        Some(rest) => std::path::PathBuf::from(
            std::env::var_os("HOME").context("HOME is not set, so ~ means nothing")?,
        )
        .join(rest),
        None => std::path::PathBuf::from(snippet.file),
    };
    let before = match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let text = match (snippet.format, before) {
        (_, None) => snippet.text.clone(),
        (connect::Format::Json, Some(before)) => {
            let existing: serde_json::Value = serde_json::from_str(&before)
                .with_context(|| format!("{} is not JSON; merge by hand", path.display()))?;
            let new: serde_json::Value = serde_json::from_str(&snippet.text)?;
            serde_json::to_string_pretty(&connect::merge_json(existing, new, url))?
        }
        (connect::Format::Toml, Some(before)) => {
            if before.contains("[mcp_servers.widgetd]") {
                eprintln!(
                    "# {} already has [mcp_servers.widgetd]: left as it is; compare it with \
                     `widgetd connect` without --write",
                    path.display()
                );
                return Ok(());
            }
            format!("{}\n{}", before.trim_end(), snippet.text)
        }
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(&path, text + "\n")
        .with_context(|| format!("cannot write {}", path.display()))?;
    eprintln!("# wrote {}", path.display());
    Ok(())
}
