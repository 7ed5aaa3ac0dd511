//! What is refused before any command runs: a command without its data
//! dir, `restore` without an explicit target, `host` without its agent
//! command; and the public URL `serve` uses when none is given.

use std::ffi::OsString;
use std::net::SocketAddr;

use super::{Cli, Command};
use widgetd_domain::db::DatabaseUrl;

impl Cli {
    /// Parses the command line (exiting with clap's message on an error),
    /// then refuses what must not run: `restore` without `--data-dir` on
    /// the command line (an environment file's `WIDGETD_DATA_DIR` would
    /// aim it at the live data dir), and a command without its data dir.
    pub fn parse_checked() -> anyhow::Result<Self> {
        use clap::{CommandFactory, FromArgMatches};
        let matches = Self::command().get_matches();
        let cli = Self::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
        if let Some(("restore", restore)) = matches.subcommand() {
            let explicit = [&matches, restore].iter().any(|m| {
                m.value_source("data_dir") == Some(clap::parser::ValueSource::CommandLine)
            });
            anyhow::ensure!(
                explicit,
                "`widgetd restore` needs its target on the command line: --data-dir DIR (a new, \
                 empty dir; WIDGETD_DATA_DIR is not used for it)"
            );
        }
        cli.refuse_missing_data_dir()?;
        if let Some(Command::Host(host)) = &cli.command
            && host.session.is_none()
        {
            refuse_missing_program(&host.command)?;
        }
        Ok(cli)
    }

    /// Only `serve` creates a data dir: every command that opens one
    /// refuses a data dir without a database, naming the flag and the
    /// variable, instead of starting a new, empty store (with its own key)
    /// where the operator's is not. `restore` fills the data dir it is
    /// given; `db copy`, `exec`, `host` and `connect` open none.
    pub fn refuse_missing_data_dir(&self) -> anyhow::Result<()> {
        let opens = match &self.command {
            None | Some(Command::Serve(_) | Command::Restore { .. } | Command::Db(_)) => false,
            Some(Command::Exec(_) | Command::Host(_) | Command::Connect(_)) => false,
            Some(_) => true,
        };
        let database = match &self.database_url {
            None => self.data_dir.join(widgetd_domain::db::DB_FILE),
            Some(DatabaseUrl::Sqlite(path)) => path.clone(),
            // The data dir holds only the key file; PostgreSQL says itself
            // whether it holds data.
            Some(DatabaseUrl::Postgres(_)) => return Ok(()),
        };
        if !opens || database.exists() {
            return Ok(());
        }
        anyhow::bail!(
            "there is no widgetd database at {}: give the data dir with --data-dir DIR or \
             WIDGETD_DATA_DIR (and the database with --database-url or WIDGETD_DATABASE_URL if it \
             is elsewhere). Only `widgetd serve` creates a new data dir.",
            database.display()
        )
    }
}

/// `host`'s agent command must exist before a session is made for it: a
/// typo would otherwise leave an empty session behind.
fn refuse_missing_program(command: &[OsString]) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let Some(program) = command.first() else {
        return Ok(());
    };
    let runnable = |path: &std::path::Path| {
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let path = std::path::Path::new(program);
    let found = if path.components().count() > 1 {
        runnable(path)
    } else {
        std::env::var_os("PATH")
            .is_some_and(|dirs| std::env::split_paths(&dirs).any(|dir| runnable(&dir.join(path))))
    };
    anyhow::ensure!(
        found,
        "the agent command `{}` was not found (not on PATH, or not executable); no session was created",
        path.display()
    );
    Ok(())
}

/// The public URL when none is given: the bound address, except that an
/// unspecified one (`0.0.0.0`, `::`, as in a container) is no URL anyone can
/// reach; loopback on the same port stands in for it.
pub fn default_public_url(addr: SocketAddr) -> String {
    match addr.ip() {
        std::net::IpAddr::V4(ip) if ip.is_unspecified() => {
            format!("http://127.0.0.1:{}", addr.port())
        }
        std::net::IpAddr::V6(ip) if ip.is_unspecified() => format!("http://[::1]:{}", addr.port()),
        _ => format!("http://{addr}"),
    }
}
