//! `widgetd exec`: run a command with a session's effective env, like
//! `op run`. The values go from the daemon straight into the child's
//! environment and are masked in what the child prints.

mod mask;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};

use anyhow::{Context, bail};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

pub use mask::{MASK, MIN_MASKED_LEN, Masker};

use widgetd_domain::secrets::EnvVarName;

/// What `exec` needs to know.
pub struct ExecOptions {
    pub url: String,
    pub token: SecretString,
    pub session: String,
    pub masking: bool,
    /// Accept an env with values that could not be decrypted, without them.
    pub partial: bool,
    pub command: Vec<OsString>,
}

#[derive(Deserialize)]
struct EnvResponse {
    env: BTreeMap<String, SecretString>,
    #[serde(default)]
    unreadable: Vec<UnreadableValue>,
}

/// A value the daemon could not decrypt (`--partial` only).
#[derive(Deserialize)]
struct UnreadableValue {
    name: String,
    scope: String,
    reason: String,
}

#[derive(Deserialize)]
struct ErrorResponse {
    error: ErrorBody,
}

#[derive(Deserialize)]
struct ErrorBody {
    code: String,
    message: String,
}

/// An HTTP client for talking to the daemon.
pub fn http_client() -> anyhow::Result<reqwest::Client> {
    // No proxy: the token and the values go straight to the daemon.
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .context("cannot set up the HTTP client")
}

/// Why the daemon refused a request: its message and code, or the status.
pub async fn refusal(response: reqwest::Response) -> String {
    let status = response.status();
    match response.json::<ErrorResponse>().await {
        Ok(e) => format!("{} ({})", e.error.message, e.error.code),
        Err(_) => status.to_string(),
    }
}

/// Fetches the effective env of `session` from the daemon at `base`; with
/// `partial`, without the values that could not be decrypted.
pub async fn fetch_env(
    client: &reqwest::Client,
    base: &str,
    token: &SecretString,
    session: &str,
    partial: bool,
) -> anyhow::Result<BTreeMap<String, SecretString>> {
    let url = format!(
        "{}/api/v1/sessions/{session}/env?partial={partial}",
        base.trim_end_matches('/')
    );
    let response = client
        .get(&url)
        .bearer_auth(token.expose_secret())
        .send()
        .await
        .with_context(|| {
            format!("cannot reach widgetd at {base}; is `widgetd serve` running there?")
        })?;
    if !response.status().is_success() {
        let detail = refusal(response).await;
        bail!("widgetd refused to hand out the env of session {session}: {detail}");
    }
    let EnvResponse { env, unreadable } = response
        .json::<EnvResponse>()
        .await
        .context("widgetd sent an env that is not valid JSON")?;
    for u in &unreadable {
        eprintln!(
            "widgetd exec: running without {} ({} scope): {}",
            u.name, u.scope, u.reason
        );
    }
    // The daemon refuses these names already; a compromised or confused
    // server must still not be able to set PATH or LD_PRELOAD here.
    for name in env.keys() {
        EnvVarName::parse(name)
            .map_err(|e| anyhow::anyhow!("refusing the env from widgetd: {e}"))?;
    }
    Ok(env)
}

/// Runs the command; returns the exit code to leave with.
pub async fn run(opts: ExecOptions) -> anyhow::Result<i32> {
    let env = fetch_env(
        &http_client()?,
        &opts.url,
        &opts.token,
        &opts.session,
        opts.partial,
    )
    .await?;
    let (program, args) = opts
        .command
        .split_first()
        .context("give the command to run after `--`")?;
    let mut command = tokio::process::Command::new(program);
    command.args(args).stdin(Stdio::inherit());
    scrub_env(&mut command);
    for (name, value) in &env {
        command.env(name, value.expose_secret());
    }
    let masker = || Masker::new(env.values().map(|v| v.expose_secret()));
    let masking = opts.masking && !masker().is_empty();
    if masking {
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
    }
    let mut child = command
        .spawn()
        .with_context(|| format!("cannot run `{}`", program.to_string_lossy()))?;
    // Ctrl-C reaches the child through the terminal; we stay alive to pass
    // its output and exit code through.
    tokio::spawn(async { while tokio::signal::ctrl_c().await.is_ok() {} });
    let pumps = masking.then(|| {
        let out = child.stdout.take().expect("piped stdout");
        let err = child.stderr.take().expect("piped stderr");
        (
            tokio::spawn(pump(out, tokio::io::stdout(), masker(), 0)),
            tokio::spawn(pump(err, tokio::io::stderr(), masker(), 0)),
        )
    });
    let status = child
        .wait()
        .await
        .context("waiting for the command failed")?;
    if let Some((out, err)) = pumps {
        out.await??;
        err.await??;
    }
    Ok(exit_code(status))
}

/// Keeps the child from inheriting widgetd's settings: the child is often
/// the agent itself, and our token reads every value of the user's sessions.
pub fn scrub_env(command: &mut tokio::process::Command) {
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("WIDGETD_") {
            command.env_remove(name);
        }
    }
}

/// Copies `from` to `to` through `masker`; returns the first `keep` bytes
/// of the masked output.
pub async fn pump(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    mut masker: Masker,
    keep: usize,
) -> std::io::Result<Vec<u8>> {
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = from.read(&mut buf).await?;
        let chunk = if n == 0 {
            masker.finish()
        } else {
            masker.push(&buf[..n])
        };
        let room = keep.saturating_sub(kept.len());
        kept.extend_from_slice(&chunk[..room.min(chunk.len())]);
        to.write_all(&chunk).await?;
        to.flush().await?;
        if n == 0 {
            return Ok(kept);
        }
    }
}

/// The child's exit code, or 128 + signal number like a shell reports it.
pub fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}
