//! `widgetd host`: the agent host loop, built in. It runs a headless agent
//! CLI one turn at a time: the first turn with the person's prompt, then one
//! turn per resume prompt, acknowledging each once its turn has started.
//! Each turn gets the session's env (masked in its output, as `exec` does)
//! and what it needs to reach `/mcp` as the session's agent.

mod api;

use std::ffi::OsString;
use std::process::Stdio;

use anyhow::Context;
use secrecy::{ExposeSecret, SecretString};
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;

use self::api::{Api, HostedSession};
use crate::exec::{self, Masker};

/// How much of a turn's stdout goes to the transcript; the rest is cut.
pub const MAX_TRANSCRIPT_BYTES: usize = 16 * 1024;

/// The placeholder in the command's arguments that the prompt replaces.
pub const PROMPT_PLACEHOLDER: &str = "{prompt}";

/// Seconds each long-poll for resume prompts lasts.
const POLL_SECS: u64 = 60;

/// What `host` needs to know.
pub struct HostOptions {
    pub url: String,
    /// An API token with the `sessions` and `env:read` scopes.
    pub token: SecretString,
    /// A session to go on with, and its agent token if known; else a new
    /// session.
    pub resume: Option<(String, Option<SecretString>)>,
    pub title: Option<String>,
    /// The first turn's prompt; none when going on with a session.
    pub prompt: Option<String>,
    pub command: Vec<OsString>,
}

/// Runs the loop until Ctrl-C; returns the exit code to leave with.
pub async fn run(opts: HostOptions) -> anyhow::Result<i32> {
    anyhow::ensure!(
        !opts.command.is_empty(),
        "give the agent's command after `--`"
    );
    let api = Api::new(&opts.url, opts.token.clone())?;
    let session = match opts.resume.clone() {
        Some((id, agent_token)) => resume(&api, id, agent_token).await?,
        None => api.create_session(opts.title.as_deref()).await?,
    };
    eprintln!(
        "widgetd host: session {} — follow it at {}/sessions/{}",
        session.id,
        api.base(),
        session.id
    );
    let mut stop = ctrl_c_watch();
    if let Some(prompt) = &opts.prompt {
        api.post_message(&session.id, "user", prompt).await?;
        run_turn(&api, &session, &opts.command, prompt, None, &mut stop).await?;
    }
    while !stopping(&stop) {
        let prompts = tokio::select! {
            _ = stop.changed() => break,
            prompts = api.prompts(&session.id, POLL_SECS) => prompts?,
        };
        for prompt in prompts {
            if stopping(&stop) {
                break;
            }
            let ack = Some(prompt.prompt_id);
            run_turn(&api, &session, &opts.command, &prompt.text, ack, &mut stop).await?;
        }
    }
    eprintln!("widgetd host: stopped");
    Ok(0)
}

/// The session to go on with, with an agent token that works: the one
/// given, or else a new one issued with the host's API token, so that a
/// host restarted on its session needs nothing it was never shown.
async fn resume(
    api: &Api,
    id: String,
    agent_token: Option<SecretString>,
) -> anyhow::Result<HostedSession> {
    if let Some(agent_token) = agent_token {
        if api.agent_token_works(&id, &agent_token).await? {
            return Ok(HostedSession {
                mcp_url: format!("{}/mcp", api.base()),
                id,
                agent_token,
            });
        }
        eprintln!(
            "widgetd host: the agent token given (WIDGETD_AGENT_TOKEN) does not work for session {id}"
        );
    }
    let session = api.reissue_agent_token(&id).await?;
    eprintln!(
        "widgetd host: issued session {id} a new agent token for its turns (the previous one stops working)"
    );
    Ok(session)
}

/// A watch that counts Ctrl-Cs; once it has one, the loop ends after the
/// current turn.
fn ctrl_c_watch() -> watch::Receiver<u32> {
    let (tx, rx) = watch::channel(0);
    tokio::spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            tx.send_modify(|n| *n += 1);
        }
    });
    rx
}

fn stopping(stop: &watch::Receiver<u32>) -> bool {
    *stop.borrow() > 0
}

/// One turn: start the agent with `prompt`, acknowledge `ack` once it has
/// started, pass its output through (masked), and put its stdout in the
/// transcript. A turn that fails is reported and the loop goes on; only a
/// turn that cannot start, or a daemon that cannot be reached, ends it.
async fn run_turn(
    api: &Api,
    session: &HostedSession,
    command: &[OsString],
    prompt: &str,
    ack: Option<i64>,
    stop: &mut watch::Receiver<u32>,
) -> anyhow::Result<()> {
    // Fetched for every turn: a value given since the last one must be there.
    let env = api.env(&session.id).await?;
    let (args, stdin_prompt) = substitute(&command[1..], prompt);
    let mut child = tokio::process::Command::new(&command[0]);
    child.args(args);
    exec::scrub_env(&mut child);
    child
        .env("WIDGETD_SESSION_ID", &session.id)
        .env("WIDGETD_MCP_URL", &session.mcp_url)
        .env("WIDGETD_AGENT_TOKEN", session.agent_token.expose_secret());
    for (name, value) in &env {
        child.env(name, value.expose_secret());
    }
    child
        .stdin(if stdin_prompt {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = child
        .spawn()
        .with_context(|| format!("cannot run `{}`", command[0].to_string_lossy()))?;
    if let Some(prompt_id) = ack {
        // Started: from here a lost prompt would be a lost turn, so it is
        // acknowledged now and not before.
        if let Err(err) = api.ack(&session.id, prompt_id).await {
            eprintln!("widgetd host: could not acknowledge prompt {prompt_id}: {err:#}");
        }
    }
    if let Some(mut stdin) = child.stdin.take() {
        let prompt = prompt.as_bytes().to_vec();
        // A turn that does not read its stdin is not an error.
        tokio::spawn(async move {
            let _ = stdin.write_all(&prompt).await;
        });
    }
    let masker = || Masker::new(env.values().map(|v| v.expose_secret()));
    let out = child.stdout.take().expect("piped stdout");
    let err = child.stderr.take().expect("piped stderr");
    let out = tokio::spawn(exec::pump(
        out,
        tokio::io::stdout(),
        masker(),
        MAX_TRANSCRIPT_BYTES + 1,
    ));
    let err = tokio::spawn(exec::pump(err, tokio::io::stderr(), masker(), 0));
    // Ctrl-C reaches the agent through the terminal too: let it finish.
    let status = loop {
        tokio::select! {
            status = child.wait() => break status.context("waiting for the agent failed")?,
            _ = stop.changed() => continue,
        }
    };
    let said = out.await??;
    err.await??;
    if let Some(text) = transcript_text(&said) {
        api.post_message(&session.id, "agent", &text).await?;
    }
    if !status.success() {
        let code = exec::exit_code(status);
        eprintln!("widgetd host: the turn failed (exit code {code}); going on");
        let note = format!("The agent's turn ended with exit code {code}.");
        api.post_message(&session.id, "system", &note).await?;
    }
    eprintln!("widgetd host: turn done; waiting for the next prompt");
    Ok(())
}

/// The arguments with `{prompt}` replaced, and whether the prompt goes on
/// stdin instead (when no argument holds the placeholder).
fn substitute(args: &[OsString], prompt: &str) -> (Vec<OsString>, bool) {
    let mut used = false;
    let args = args
        .iter()
        .map(|arg| match arg.to_str() {
            Some(s) if s.contains(PROMPT_PLACEHOLDER) => {
                used = true;
                OsString::from(s.replace(PROMPT_PLACEHOLDER, prompt))
            }
            _ => arg.clone(),
        })
        .collect();
    (args, !used)
}

/// A turn's stdout as a transcript message: masked already, cut to
/// [`MAX_TRANSCRIPT_BYTES`]; none when it said nothing.
fn transcript_text(said: &[u8]) -> Option<String> {
    let cut = said.len() > MAX_TRANSCRIPT_BYTES;
    let mut text = String::from_utf8_lossy(&said[..said.len().min(MAX_TRANSCRIPT_BYTES)])
        .trim_start_matches(['\r', '\n'])
        .trim_end()
        .to_owned();
    if text.trim().is_empty() {
        return None;
    }
    if cut {
        text.push_str("\n[… cut by widgetd host]");
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_replaces_the_placeholder_or_goes_on_stdin() {
        let args: Vec<OsString> = ["-p", "say: {prompt}!", "--resume"]
            .iter()
            .map(OsString::from)
            .collect();
        let (out, stdin) = substitute(&args, "hi");
        assert_eq!(out[1], OsString::from("say: hi!"));
        assert!(!stdin);
        let (out, stdin) = substitute(&args[..1], "hi");
        assert_eq!(out, vec![OsString::from("-p")]);
        assert!(stdin);
    }

    #[test]
    fn transcript_text_is_cut_and_blank_output_is_dropped() {
        assert_eq!(transcript_text(b" \n\n"), None);
        assert_eq!(transcript_text(b"done\n").as_deref(), Some("done"));
        let long = vec![b'a'; MAX_TRANSCRIPT_BYTES + 1];
        let text = transcript_text(&long).unwrap();
        assert!(text.ends_with("[… cut by widgetd host]"));
        assert_eq!(text.matches('a').count(), MAX_TRANSCRIPT_BYTES);
    }
}
