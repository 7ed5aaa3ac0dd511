use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;
use widgetd::cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let default_level = match cli.command {
        None | Some(Command::Serve(_)) => "info",
        Some(_) => "warn",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_level)),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = tokio::runtime::Runtime::new().expect("cannot start the async runtime");
    match runtime.block_on(widgetd::cli::run(cli)) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("widgetd: {err:#}");
            ExitCode::FAILURE
        }
    }
}
