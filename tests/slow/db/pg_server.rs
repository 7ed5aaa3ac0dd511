//! A PostgreSQL server of one test's own, for faults that would disturb
//! every other test on the shared server: restarting it under load.
//!
//! Made with the machine's PostgreSQL binaries (`pg_config --bindir`, else
//! `/usr/lib/postgresql/*/bin`: the `postgresql` package that also runs
//! the shared server): `initdb` into a
//! temporary dir, `pg_ctl start` on a free loopback port with its socket in
//! that dir, `pg_ctl restart -m fast` as an operator restarts it, and an
//! immediate stop when dropped. PostgreSQL refuses to run as root, so under
//! root every command runs as the `postgres` user (`runuser`).

use std::path::PathBuf;
use std::process::Command;

use tempfile::TempDir;

use crate::helpers::free_port;

/// A running server of this test's own.
pub struct PrivateServer {
    dir: TempDir,
    bin: PathBuf,
    port: u16,
}

impl PrivateServer {
    /// Creates and starts the server; panics naming what is missing.
    pub fn start() -> PrivateServer {
        let bin = bindir();
        let dir = tempfile::tempdir().unwrap();
        if is_root() {
            // The server's own user must own its files and socket dir.
            let status = Command::new("chown")
                .args(["postgres:postgres"])
                .arg(dir.path())
                .status()
                .unwrap();
            assert!(status.success(), "chown of the server's dir failed");
        }
        let server = PrivateServer {
            port: free_port(),
            dir,
            bin,
        };
        let mut initdb = server.command("initdb");
        initdb.args([
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-sync",
            "-D",
        ]);
        checked(initdb.arg(server.data()));
        server.start_again();
        server
    }

    /// Starts the stopped server with the same options.
    pub fn start_again(&self) {
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {} -k {}",
            self.port,
            self.dir.path().display()
        );
        self.pg_ctl(&["start", "-o", &options]);
    }

    /// Stops it as an operator does (`-m fast`: every session terminated).
    pub fn stop(&self) {
        self.pg_ctl(&["stop", "-m", "fast"]);
    }

    /// The URL of its `postgres` database.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Restarts it as an operator does: a fast shutdown (every session is
    /// terminated, the checkpoint written), then a start with the same
    /// options; returns once it accepts connections again.
    pub fn restart(&self) {
        self.pg_ctl(&["restart", "-m", "fast"]);
    }

    /// The server's log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Runs `pg_ctl` with `args`, waiting for it to finish its work.
    fn pg_ctl(&self, args: &[&str]) {
        let mut pg_ctl = self.command("pg_ctl");
        // `-l`: the server's output goes to its log, never to this pipe,
        // which would stay open as long as the server runs.
        pg_ctl.args(["-w", "-t", "60", "-l"]);
        pg_ctl.arg(self.dir.path().join("server.log"));
        checked(pg_ctl.arg("-D").arg(self.data()).args(args));
    }

    /// One of the server's tools, run as the server's user.
    fn command(&self, tool: &str) -> Command {
        let mut command = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(self.bin.join(tool));
            c
        } else {
            Command::new(self.bin.join(tool))
        };
        command.current_dir(self.dir.path());
        command
    }
}

/// Runs `command`; panics with its output unless it succeeded.
fn checked(command: &mut Command) {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{command:?} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        let mut stop = self.command("pg_ctl");
        stop.args(["-w", "-t", "60", "-D"]).arg(self.data());
        let _ = stop.args(["stop", "-m", "immediate"]).output();
    }
}

/// The PostgreSQL binaries' dir: `pg_config --bindir`, else the newest
/// `/usr/lib/postgresql/*/bin` (Debian's layout, where `pg_config` comes
/// with the development package).
fn bindir() -> PathBuf {
    let from_pg_config = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let debian = || {
        let mut dirs: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
            .collect();
        dirs.sort();
        dirs.pop().map(|(_, bin)| bin)
    };
    let has_tools = |bin: &PathBuf| bin.join("initdb").exists() && bin.join("pg_ctl").exists();
    from_pg_config
        .filter(has_tools)
        .or_else(|| debian().filter(has_tools))
        .expect(
            "no initdb and pg_ctl were found (pg_config --bindir, /usr/lib/postgresql/*/bin): \
             install PostgreSQL's server (Debian: postgresql) to run the tests that restart a \
             server of their own",
        )
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}
