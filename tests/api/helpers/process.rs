//! The real `widgetd` binary as a child process: one-shot commands with a
//! time limit ([`OutputWithin`]), and [`Daemon`], `widgetd serve` started
//! and stopped as an operator would.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use widgetd_domain::db::DatabaseUrl;
use widgetd_domain::startup;

use super::backend;
use super::login::PASSWORD;

/// The `widgetd` binary, with a clean environment for widgetd's variables;
/// on the database of `data_dir`'s [`TestDir`] if it has one.
pub fn widgetd(data_dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_widgetd"));
    match backend::database_for(data_dir) {
        Some(url) => command.env("WIDGETD_DATABASE_URL", url),
        None => command.env_remove("WIDGETD_DATABASE_URL"),
    };
    command
        .arg("--data-dir")
        .arg(data_dir)
        .env_remove("WIDGETD_MASTER_KEY")
        .env_remove("WIDGETD_TOKEN")
        .env_remove("WIDGETD_URL")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null());
    command
}

/// A data dir as the first `widgetd serve` leaves it (database, key, first
/// data key), for tests that go on with the CLI: no other command creates
/// one.
pub fn new_data_dir(dir: &Path) {
    let dir = dir.to_owned();
    let database = backend::database_for(&dir).map(|u| DatabaseUrl::parse(&u).unwrap());
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let data = startup::open(&dir, database.as_ref()).await.unwrap();
            data.db.close().await;
        });
    })
    .join()
    .unwrap();
}

/// Runs the binary with `stdin` piped in; returns its output. Bounded by
/// [`COMMAND_LIMIT`].
pub fn run_with_stdin(command: &mut Command, stdin: &str) -> Output {
    use std::io::Write;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    collect_within(command, child, COMMAND_LIMIT)
}

/// How long a command of the binary that exits by itself (`user add`,
/// `check`, `backup`, …) may run before its test fails. Each takes well
/// under a second alone, a few on a loaded two-core machine.
pub const COMMAND_LIMIT: Duration = Duration::from_secs(60);

/// How long `widgetd serve` may take to refuse a data dir it must not use
/// (it opens the database and stops, in well under a second): a daemon
/// that serves instead fails the test this soon, not at the harness's limit.
pub const REFUSAL_LIMIT: Duration = Duration::from_secs(15);

/// How long a daemon may take to exit after SIGTERM or SIGINT.
pub const STOP_LIMIT: Duration = Duration::from_secs(20);

/// `Command::output` with a time limit: a process that should exit by
/// itself and does not fails its test with a message instead of hanging it.
pub trait OutputWithin {
    /// Runs the command to its end and returns what it printed; if it has
    /// not exited within `limit`, kills it and fails the test, showing what
    /// it printed so far.
    fn output_within(&mut self, limit: Duration) -> Output;
}

impl OutputWithin for Command {
    fn output_within(&mut self, limit: Duration) -> Output {
        let child = self
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", describe(self)));
        collect_within(self, child, limit)
    }
}

/// The program and its arguments, for a failure message (not its
/// environment, which may hold tokens).
fn describe(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|part| part.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Reads a pipe to its end on a thread; the bytes so far stay readable
/// through the returned buffer even while a grandchild holds the pipe open.
fn drain(
    mut pipe: impl std::io::Read + Send + 'static,
    done: std::sync::mpsc::Sender<()>,
) -> Arc<std::sync::Mutex<Vec<u8>>> {
    let buffer = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = buffer.clone();
    std::thread::spawn(move || {
        let mut chunk = [0u8; 8192];
        while let Ok(n @ 1..) = pipe.read(&mut chunk) {
            sink.lock().unwrap().extend_from_slice(&chunk[..n]);
        }
        let _ = done.send(());
    });
    buffer
}

/// Waits for `child` (its stdout and stderr piped) and its output, at most
/// `limit`; kills it and fails the test past that.
fn collect_within(command: &Command, mut child: std::process::Child, limit: Duration) -> Output {
    let deadline = Instant::now() + limit;
    let (done, finished) = std::sync::mpsc::channel();
    let out = drain(child.stdout.take().unwrap(), done.clone());
    let err = drain(child.stderr.take().unwrap(), done);
    let status = wait_until(&mut child, deadline);
    // Both pipes reach their end once the process (and any child of its
    // that kept them) has exited.
    let closed = status.is_some()
        && (0..2).all(|_| {
            finished
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .is_ok()
        });
    let (stdout, stderr) = (out.lock().unwrap().clone(), err.lock().unwrap().clone());
    match status {
        Some(status) if closed => Output {
            status,
            stdout,
            stderr,
        },
        _ => panic!(
            "`{}` did not finish within {limit:?}; it printed:\n{}\n{}",
            describe(command),
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr)
        ),
    }
}

/// The exit status of `child` if it exits before `deadline`; otherwise
/// kills it and returns `None`.
fn wait_until(child: &mut std::process::Child, deadline: Instant) -> Option<ExitStatus> {
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills process `pid` with SIGKILL if the returned guard is still alive
/// after `limit`, saying `what` it failed to do: the test's reads of the
/// process's output then reach their end and its assertions fail, instead
/// of waiting for ever. Drop the guard before the process is reaped.
#[must_use = "the process is killed only while the guard lives"]
pub fn kill_after(pid: u32, limit: Duration, what: &str) -> Watchdog {
    let (cancel, cancelled) = std::sync::mpsc::channel::<()>();
    let what = what.to_owned();
    std::thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = cancelled.recv_timeout(limit) {
            eprintln!("{what}: not done after {limit:?}; killing process {pid}");
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    });
    Watchdog { _cancel: cancel }
}

/// See [`kill_after`]; dropping it lets the process live.
pub struct Watchdog {
    _cancel: std::sync::mpsc::Sender<()>,
}

/// Waits for `child` to exit, at most `limit`; past that kills it and
/// fails the test with `what` (what the process was expected to do).
pub fn wait_within(child: &mut std::process::Child, limit: Duration, what: &str) -> ExitStatus {
    wait_until(child, Instant::now() + limit)
        .unwrap_or_else(|| panic!("{what}: the process had not exited after {limit:?}"))
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The real `widgetd serve` as a child process on 127.0.0.1:0, logging to files.
pub struct Daemon {
    pub child: std::process::Child,
    pub url: String,
    pub out_log: PathBuf,
    pub err_log: PathBuf,
}

impl Daemon {
    /// Starts the daemon on `data_dir` with `RUST_LOG=trace` and the admin
    /// password `PASSWORD`; waits until it listens.
    pub fn start(data_dir: &Path, logs: &Path, label: &str) -> Daemon {
        Self::start_with(data_dir, logs, label, &[])
    }

    /// [`Daemon::start`] with more `serve` arguments.
    pub fn start_with(data_dir: &Path, logs: &Path, label: &str, extra: &[&str]) -> Daemon {
        let (out_log, err_log) = (
            logs.join(format!("{label}.out")),
            logs.join(format!("{label}.err")),
        );
        let mut child = widgetd(data_dir)
            .args(["serve", "--bind", "127.0.0.1:0"])
            .args(extra)
            .env("RUST_LOG", "trace")
            .env("WIDGETD_ADMIN_PASSWORD", PASSWORD)
            .stdout(std::fs::File::create(&out_log).unwrap())
            .stderr(std::fs::File::create(&err_log).unwrap())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let url = loop {
            let text = std::fs::read_to_string(&out_log).unwrap_or_default();
            if let Some(rest) = text.split("listening on ").nth(1) {
                break rest.lines().next().unwrap().trim().to_owned();
            }
            if child.try_wait().unwrap().is_some() {
                let err = std::fs::read_to_string(&err_log).unwrap_or_default();
                panic!("the daemon exited: {text}\n{err}");
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the daemon did not start: {text}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        Daemon {
            child,
            url,
            out_log,
            err_log,
        }
    }

    /// Sends SIGTERM and waits (at most [`STOP_LIMIT`]); asserts a clean exit.
    pub fn stop(mut self) {
        Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        let status = wait_within(
            &mut self.child,
            STOP_LIMIT,
            "the daemon did not shut down on SIGTERM",
        );
        assert!(
            status.success(),
            "the daemon did not shut down cleanly on SIGTERM: {status}"
        );
    }
}

impl Drop for Daemon {
    /// A test that failed before `stop` leaves no daemon running.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// [`OutputWithin`] for a test on the tokio runtime (the command talks to
/// the in-process app): the command is killed and the test fails if it has
/// not exited within `limit`.
pub async fn output_async_within(command: Command, limit: Duration) -> Output {
    let mut command = tokio::process::Command::from(command);
    command.kill_on_drop(true);
    tokio::time::timeout(limit, command.output())
        .await
        .unwrap_or_else(|_| panic!("{command:?} did not finish within {limit:?}"))
        .unwrap()
}

/// A loopback port nothing listens on now, for a child process to listen on.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn interrupt(child: &tokio::process::Child) {
    let pid = child.id().unwrap().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(sent.success());
}
