//! The real agent CLIs, installed from `tests/agents/package-lock.json` with
//! `npm ci` the first time a test needs them (one install at a time, across
//! threads and processes), and run with a clean environment that reaches
//! nothing but loopback.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `tests/agents`, where the CLIs are pinned.
pub fn agents_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents")
}

/// The installed CLI `name` (`claude`, `codex`, `gemini`), installing the
/// pinned set first if `node_modules` is missing or older than the lockfile.
pub fn cli(name: &str) -> PathBuf {
    static INSTALLED: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    INSTALLED.get_or_init(install);
    let bin = agents_dir().join("node_modules/.bin").join(name);
    assert!(bin.exists(), "{} is missing after npm ci", bin.display());
    bin
}

/// `npm ci` under an exclusive lock, unless the installed set matches the
/// lockfile (a copy of which is kept beside it once installed).
fn install() {
    let dir = agents_dir();
    let lock = std::fs::File::create(dir.join(".install.lock")).unwrap();
    let _held = Flock::exclusive(&lock);
    let wanted = std::fs::read(dir.join("package-lock.json")).unwrap();
    let stamp = dir.join("node_modules/.widgetd-installed-lock.json");
    if std::fs::read(&stamp).ok().as_deref() == Some(&wanted[..]) {
        return;
    }
    // Straight to stderr, past the test harness's capture: a first run
    // shows why it takes a minute.
    let say = |line: String| {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "{line}");
    };
    say(format!(
        "installing the pinned agent CLIs in {} with `npm ci` (once; about 900 MB)…",
        dir.display()
    ));
    let started = Instant::now();
    let mut child = Command::new("npm")
        .args(["ci", "--ignore-scripts", "--no-audit", "--no-fund"])
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "the agent tests need the real Claude Code, Codex and Gemini CLIs from npm, \
                 and `npm` could not run ({e}): install node (20 or later) and npm"
            )
        });
    let status = wait_bounded(&mut child, Duration::from_secs(900), "npm ci");
    assert!(
        status.success(),
        "`npm ci` in {} failed ({status}); the agent tests cannot run without the CLIs",
        dir.display()
    );
    // Scripts stay off (`.npmrc`), as no other package needs one; Claude
    // Code's own postinstall only copies its platform binary into place.
    let claude = dir.join("node_modules/@anthropic-ai/claude-code");
    let mut child = Command::new("node")
        .arg("install.cjs")
        .current_dir(&claude)
        .stdin(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("`node` could not run ({e}): install node 20 or later"));
    let placed = wait_bounded(
        &mut child,
        Duration::from_secs(300),
        "claude-code's install.cjs",
    );
    assert!(
        placed.success(),
        "claude-code's install.cjs failed ({placed})"
    );
    std::fs::write(&stamp, &wanted).unwrap();
    say(format!(
        "installed the agent CLIs in {:.0?}",
        started.elapsed()
    ));
}

/// Waits for `child` at most `limit`; kills it and fails after that.
pub fn wait_bounded(
    child: &mut std::process::Child,
    limit: Duration,
    what: &str,
) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// An exclusive `flock` on a file, released when dropped.
struct Flock<'a>(&'a std::fs::File);

impl<'a> Flock<'a> {
    fn exclusive(file: &'a std::fs::File) -> Self {
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a descriptor this function borrows for its life.
        let done = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        assert_eq!(done, 0, "cannot lock tests/agents/.install.lock");
        Self(file)
    }
}

impl Drop for Flock<'_> {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        // SAFETY: as above.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// A project folder and a home of its own for one agent run: nothing of
/// the machine's own configuration is read, nothing is written outside.
pub struct Workspace {
    _root: tempfile::TempDir,
    pub project: PathBuf,
    pub home: PathBuf,
}

impl Workspace {
    pub fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let project = root.path().join("project");
        let home = root.path().join("home");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        Self {
            project,
            home,
            _root: root,
        }
    }

    /// Writes `text` at `file` (relative to the project; `~/` to the home).
    pub fn write(&self, file: &str, text: &str) {
        let path = match file.strip_prefix("~/") {
            Some(rest) => self.home.join(rest),
            None => self.project.join(file),
        };
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// The environment every agent CLI runs with: this home, the fake
    /// model, no telemetry, no update checks, no proxies, and `PATH` with
    /// the pinned CLIs first.
    pub fn env(&self, model_url: &str) -> Vec<(String, String)> {
        let bin = agents_dir().join("node_modules/.bin");
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let pairs = [
            ("HOME", self.home.to_str().unwrap()),
            ("PATH", &path),
            ("ANTHROPIC_BASE_URL", model_url),
            ("ANTHROPIC_API_KEY", "sk-ant-fake-key-for-tests"),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("DISABLE_AUTOUPDATER", "1"),
            ("DISABLE_TELEMETRY", "1"),
            ("DISABLE_ERROR_REPORTING", "1"),
            ("CLAUDE_CODE_DISABLE_TERMINAL_TITLE", "1"),
            ("GEMINI_CLI_NO_RELAUNCH", "true"),
            // Anything but loopback goes to a dead loopback proxy: no
            // CLI reaches out to its vendor during a test.
            ("HTTPS_PROXY", "http://127.0.0.1:9"),
            ("HTTP_PROXY", "http://127.0.0.1:9"),
            ("ALL_PROXY", "http://127.0.0.1:9"),
            ("NO_PROXY", "127.0.0.1,localhost"),
            ("OTEL_SDK_DISABLED", "true"),
            ("NO_COLOR", "1"),
            ("CI", "1"),
        ];
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// `program` in the project folder with [`Workspace::env`] and nothing
    /// of widgetd's own environment.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>, model_url: &str) -> Command {
        let mut command = Command::new(program);
        command.current_dir(&self.project).env_clear();
        command.envs(self.env(model_url));
        command
    }
}
