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

use crate::secrets::EnvVarName;

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

/// Fetches the session's effective env from the daemon.
async fn fetch_env(opts: &ExecOptions) -> anyhow::Result<BTreeMap<String, SecretString>> {
    let url = format!(
        "{}/api/v1/sessions/{}/env?partial={}",
        opts.url.trim_end_matches('/'),
        opts.session,
        opts.partial
    );
    // No proxy: the token and the values go straight to the daemon.
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .context("cannot set up the HTTP client")?;
    let response = client
        .get(&url)
        .bearer_auth(opts.token.expose_secret())
        .send()
        .await
        .with_context(|| {
            format!(
                "cannot reach widgetd at {}; is `widgetd serve` running there?",
                opts.url
            )
        })?;
    let status = response.status();
    if !status.is_success() {
        let detail = match response.json::<ErrorResponse>().await {
            Ok(e) => format!("{} ({})", e.error.message, e.error.code),
            Err(_) => status.to_string(),
        };
        bail!(
            "widgetd refused to hand out the env of session {}: {detail}",
            opts.session
        );
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
    let env = fetch_env(&opts).await?;
    let (program, args) = opts
        .command
        .split_first()
        .context("give the command to run after `--`")?;
    let mut command = tokio::process::Command::new(program);
    command.args(args).stdin(Stdio::inherit());
    // The child is often the agent itself: it must not inherit our token
    // (which reads every value of the user's sessions) or any other widgetd
    // setting.
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("WIDGETD_") {
            command.env_remove(name);
        }
    }
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
            tokio::spawn(pump(out, tokio::io::stdout(), masker())),
            tokio::spawn(pump(err, tokio::io::stderr(), masker())),
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

async fn pump(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    mut masker: Masker,
) -> std::io::Result<()> {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = from.read(&mut buf).await?;
        let chunk = if n == 0 {
            masker.finish()
        } else {
            masker.push(&buf[..n])
        };
        to.write_all(&chunk).await?;
        to.flush().await?;
        if n == 0 {
            return Ok(());
        }
    }
}

/// The child's exit code, or 128 + signal number like a shell reports it.
fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}
