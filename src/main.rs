use std::process::ExitCode;

use widgetd::cli::{Cli, Command};

/// glibc serves an allocation above a threshold with its own `mmap`, and
/// gives it back to the system when freed; but after the first such free it
/// raises the threshold to that size, and later 19 MiB argon2 blocks then
/// stay in the heap (about 20 logins left an idle daemon near 224 MiB).
/// A fixed threshold keeps every block above 1 MiB mapped and returned.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn give_big_blocks_back() {
    // SAFETY: mallopt only changes allocator tuning; called before any
    // thread is started.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1024 * 1024);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn give_big_blocks_back() {}

fn main() -> ExitCode {
    give_big_blocks_back();
    let cli = match Cli::parse_checked() {
        Ok(cli) => cli,
        Err(err) => {
            eprintln!("widgetd: {err:#}");
            return ExitCode::FAILURE;
        }
    };
    let default_level = match cli.command {
        None | Some(Command::Serve(_)) => "info",
        Some(_) => "warn",
    };
    widgetd::logging::init(cli.log_format, default_level);
    let runtime = tokio::runtime::Runtime::new().expect("cannot start the async runtime");
    match runtime.block_on(widgetd::cli::run(cli)) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("widgetd: {err:#}");
            ExitCode::FAILURE
        }
    }
}
