//! The real `widgetd` binary on a temporary data dir: built with the same
//! cargo if needed, started on loopback, stopped with SIGTERM.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The admin password the bench's data dir starts with.
pub const PASSWORD: &str = "bench password, not a secret";

/// Builds the release daemon (a no-op when it is up to date) and returns it.
pub fn build() -> anyhow::Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let status = Command::new(cargo)
        .args([
            "build",
            "--release",
            "--quiet",
            "--bin",
            "widgetd",
            "--manifest-path",
        ])
        .arg(&manifest)
        .status()?;
    anyhow::ensure!(status.success(), "building the daemon failed");
    let exe = std::env::current_exe()?;
    // target/release/examples/bench → target/release/widgetd
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|dir| dir.join("widgetd"))
        .ok_or_else(|| anyhow::anyhow!("cannot find the target directory"))?;
    anyhow::ensure!(bin.exists(), "no daemon binary at {}", bin.display());
    Ok(bin)
}

/// A running daemon.
pub struct Daemon {
    pub child: Child,
    pub url: String,
    /// Spawn until the first answered HTTP request.
    pub start_ms: f64,
}

impl Daemon {
    /// Starts `bin serve` on `data_dir` (and `database`, when given) and
    /// waits for its first answer.
    pub async fn start(
        bin: &Path,
        data_dir: &Path,
        database: Option<&str>,
    ) -> anyhow::Result<Daemon> {
        let spawned = Instant::now();
        let mut child = command(bin, data_dir, database);
        let mut child = child
            .args(["serve", "--bind", "127.0.0.1:0"])
            .env("WIDGETD_ADMIN_PASSWORD", PASSWORD)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdout = child.stdout.take().expect("piped");
        // Owned from here on, so an error below does not leave it running.
        let mut daemon = Daemon {
            child,
            url: String::new(),
            start_ms: 0.0,
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = line.split("listening on ").nth(1) {
                    let _ = tx.send(url.trim().to_owned());
                }
            }
        });
        let url =
            tokio::task::spawn_blocking(move || rx.recv_timeout(Duration::from_secs(30))).await??;
        daemon.url.clone_from(&url);
        let client = reqwest::Client::new();
        loop {
            if client.get(format!("{url}/login")).send().await.is_ok() {
                break;
            }
            anyhow::ensure!(spawned.elapsed() < Duration::from_secs(30), "no answer");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        daemon.start_ms = spawned.elapsed().as_secs_f64() * 1000.0;
        Ok(daemon)
    }

    /// Resident memory of the daemon in MiB.
    pub fn rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(f64::NAN, |kib| kib / 1024.0)
    }

    /// SIGTERM, then waits for the exit.
    pub fn stop(mut self) -> anyhow::Result<()> {
        Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()?;
        let status = self.child.wait()?;
        anyhow::ensure!(status.success(), "the daemon exited with {status}");
        Ok(())
    }
}

impl Drop for Daemon {
    /// A bench that failed before `stop` leaves no daemon running.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `bin --data-dir data_dir` on `database` (the data dir's SQLite file when
/// `None`), with the master key from the data dir.
fn command(bin: &Path, data_dir: &Path, database: Option<&str>) -> Command {
    let mut command = Command::new(bin);
    command
        .arg("--data-dir")
        .arg(data_dir)
        .env_remove("WIDGETD_MASTER_KEY")
        .stdin(Stdio::null());
    match database {
        Some(url) => command.env("WIDGETD_DATABASE_URL", url),
        None => command.env_remove("WIDGETD_DATABASE_URL"),
    };
    command
}

/// Runs a CLI command of `bin` on `data_dir` beside the daemon; its stdout.
pub fn cli(
    bin: &Path,
    data_dir: &Path,
    database: Option<&str>,
    args: &[&str],
) -> anyhow::Result<String> {
    let output = command(bin, data_dir, database).args(args).output()?;
    anyhow::ensure!(
        output.status.success(),
        "widgetd {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8(output.stdout)?)
}
