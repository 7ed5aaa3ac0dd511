//! What each command does. Thin: parse, call the library, print.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use secrecy::{ExposeSecret, SecretString};
use tokio::net::TcpListener;

use super::{
    AuditCommand, Cli, Command, DbCommand, EnvCommand, KeysCommand, ServeArgs, SessionCommand,
    TokenCommand, UserCommand,
};
use crate::exec::{self, ExecOptions};
use widgetd_domain::Core;
use widgetd_domain::audit::Entry;
use widgetd_domain::auth::{self, Role, passwords};
use widgetd_domain::db::{DB_FILE, DatabaseUrl};
use widgetd_domain::startup::{self, DataDir};

use crate::settings::Settings;
use crate::state::AppState;

/// Runs a parsed command line; returns the process exit code.
pub async fn run(cli: Cli) -> anyhow::Result<u8> {
    let dir = cli.data_dir;
    let database = cli.database_url;
    let command = cli
        .command
        .unwrap_or_else(|| Command::Serve(ServeArgs::from_env()));
    let admin = match command {
        Command::Serve(args) => return serve(&dir, database.as_ref(), args).await.map(|()| 0),
        Command::Backup { path } => {
            return super::data::backup(&dir, database.as_ref(), &path)
                .await
                .map(|()| 0);
        }
        Command::Restore {
            backup,
            key_file,
            force,
        } => {
            return super::data::restore(
                &dir,
                database.as_ref(),
                &backup,
                key_file.as_deref(),
                force,
            )
            .await;
        }
        Command::Db(DbCommand::Copy { from, to, json }) => {
            return super::data::copy_database(&from, &to, json)
                .await
                .map(|()| 0);
        }
        Command::Check { quick, json } => {
            return super::data::check(&dir, database.as_ref(), quick, json).await;
        }
        Command::Exec(args) => {
            let code = exec::run(ExecOptions {
                url: args.url,
                token: SecretString::from(args.token),
                session: args.session,
                masking: !args.no_masking,
                partial: args.partial,
                command: args.command,
            })
            .await?;
            return Ok(u8::try_from(code).unwrap_or(1));
        }
        Command::Host(args) => {
            let code = super::agents::host(args).await?;
            return Ok(u8::try_from(code).unwrap_or(1));
        }
        Command::Connect(args) => return super::agents::connect(args).await.map(|()| 0),
        Command::User(cmd) => Admin::User(cmd),
        Command::Token(cmd) => Admin::Token(cmd),
        Command::Session(cmd) => Admin::Session(cmd),
        Command::Env(cmd) => Admin::Env(cmd),
        Command::Keys(cmd) => Admin::Keys(cmd),
        Command::Audit(cmd) => Admin::Audit(cmd),
        Command::Slack(cmd) => Admin::Slack(cmd),
    };
    let url = database.unwrap_or_else(|| DatabaseUrl::Sqlite(dir.join(DB_FILE)));
    let data = startup::open(&dir, Some(&url)).await?;
    let db = data.db.clone();
    let result = match admin {
        Admin::User(cmd) => super::accounts::user(&data, cmd).await,
        Admin::Token(cmd) => super::accounts::token(&data, cmd).await,
        Admin::Session(cmd) => super::sessions::run(data, cmd).await,
        Admin::Env(cmd) => super::vault::env(&data, cmd).await,
        Admin::Keys(cmd) => super::vault::keys(&data, cmd).await,
        Admin::Audit(cmd) => super::data::audit(&data, cmd).await,
        Admin::Slack(cmd) => super::slack::run(&data, cmd).await,
    };
    // Closing checkpoints the WAL, so the database file is complete and
    // stable once the command returns.
    db.close().await;
    result
        .map(|()| 0)
        .map_err(|e| widgetd_domain::startup::explain_damage(e, &url))
}

/// The commands that work on an opened data dir.
enum Admin {
    User(UserCommand),
    Token(TokenCommand),
    Session(SessionCommand),
    Env(EnvCommand),
    Keys(KeysCommand),
    Audit(AuditCommand),
    Slack(super::SlackCommand),
}

async fn serve(dir: &Path, database: Option<&DatabaseUrl>, args: ServeArgs) -> anyhow::Result<()> {
    let data = startup::open(dir, database).await?;
    // Bind before creating the first admin: if the port is taken, a
    // generated password must not be committed without being shown.
    let listener = TcpListener::bind(args.bind).await.with_context(|| {
        format!(
            "cannot listen on {}; is another widgetd running? (--bind / WIDGETD_BIND)",
            args.bind
        )
    })?;
    let admin_password = if args.demo {
        crate::demo::check_data_dir(&data.db).await?;
        Bootstrap::NotNeeded
    } else {
        bootstrap_admin(&data).await?
    };
    // Listened for before "listening on" is printed: a TERM or INT that
    // follows it at once must shut down cleanly, not kill the process.
    let shutdown = shutdown_signal()?;
    let addr = listener.local_addr()?;
    let public_url = args
        .public_url
        .unwrap_or_else(|| super::default_public_url(addr));
    let public_url = public_url.trim_end_matches('/').to_owned();
    println!(
        "widgetd {} listening on http://{addr}",
        env!("CARGO_PKG_VERSION")
    );
    let shown_dir = std::fs::canonicalize(&data.path).unwrap_or_else(|_| data.path.clone());
    match database {
        Some(url @ DatabaseUrl::Postgres(_)) => {
            println!(
                "  data dir:   {} (key file; --data-dir or WIDGETD_DATA_DIR to change)",
                shown_dir.display()
            );
            println!("  database:   {url} (shared by every daemon of this deployment)");
        }
        _ => println!(
            "  data dir:   {} (database and key file; --data-dir or WIDGETD_DATA_DIR to change)",
            shown_dir.display()
        ),
    }
    println!(
        "  master key: {} (back it up: without it the data cannot be read)",
        data.master_source
    );
    let first_start = match admin_password {
        Bootstrap::NotNeeded => false,
        Bootstrap::GivenPassword => {
            println!(
                "\nFirst start: created the user `admin` with the password from WIDGETD_ADMIN_PASSWORD."
            );
            true
        }
        Bootstrap::Generated(password) => {
            println!(
                "\nFirst start: created the user `admin` with the password\n\n    {}\n",
                password.expose_secret()
            );
            println!("It is shown only this once. Change it with `widgetd user passwd admin`.");
            true
        }
    };
    if first_start {
        println!("\nNext: mint an API token for your agent host and create a session:");
        println!("    export WIDGETD_DATA_DIR={}", shown_dir.display());
        println!(
            "    export WIDGETD_TOKEN=$(widgetd token create --user admin --scope sessions,env:read)"
        );
        println!(
            "    curl -s -X POST -H \"Authorization: Bearer $WIDGETD_TOKEN\" {public_url}/api/v1/sessions"
        );
        println!("README.md (\"Five minutes with widgetd\") goes on from there.");
    }
    let db = data.db.clone();
    let mut settings = Settings::new(public_url);
    settings.domain.prompt_tag = args.prompt_tag;
    settings.domain.elicitation = args.elicitation;
    settings.domain.widget_ttl_ms =
        i64::try_from(args.widget_ttl_secs.saturating_mul(1000)).unwrap_or(i64::MAX);
    settings.webhooks.allow_private = args.webhooks_allow_private;
    settings.trusted_proxies = args.trusted_proxies;
    settings.forwarded_header = args.forwarded_header;
    settings.slack.api_base = args.slack_api_base;
    settings
        .mcp_allowed_hosts
        .extend(args.mcp_allowed_hosts.into_iter().filter(|h| !h.is_empty()));
    let state = AppState::new(data.db, data.keyring, settings.clone());
    let core = state.core.clone();
    // Stopped before the pool closes, so none of them meets a closed pool
    // (a webhook cut off mid-send stays due and is sent again later).
    let mut jobs = vec![
        tokio::spawn(widgetd_domain::jobs::sweep_forever(
            core.clone(),
            Duration::from_secs(args.sweep_secs.max(1)),
        )),
        tokio::spawn(widgetd_notify::webhooks::delivery::run(
            core.clone(),
            settings.webhooks,
        )),
        tokio::spawn(widgetd_notify::slack::delivery::run(
            core.clone(),
            settings.slack,
        )),
    ];
    if args.demo {
        jobs.push(start_demo(&core, &shown_dir).await?);
    }
    tracing::info!(%addr, "serving");
    let served = crate::serve(listener, state, shutdown).await;
    for job in &jobs {
        job.abort();
    }
    served.context("the server failed")?;
    db.close().await;
    tracing::info!("stopped");
    Ok(())
}

/// Creates the demo user and session, says how to log in, and starts the
/// demo agent.
async fn start_demo(state: &Arc<Core>, dir: &Path) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let given = std::env::var("WIDGETD_ADMIN_PASSWORD").ok();
    let password = given
        .clone()
        .map_or_else(passwords::generate, SecretString::from);
    let shown = SecretString::from(password.expose_secret());
    let (_, session, created) = crate::demo::prepare(state, password).await?;
    let url = format!("{}/sessions/{session}", state.settings.public_url);
    println!("\nDemo mode: the built-in demo agent is waiting for you at\n\n    {url}\n");
    match (created, given) {
        (true, None) => println!(
            "Log in as `{}` with the password\n\n    {}\n\n(shown only this once).",
            crate::demo::DEMO_USER,
            shown.expose_secret()
        ),
        (true, Some(_)) => println!(
            "Log in as `{}` with the password from WIDGETD_ADMIN_PASSWORD.",
            crate::demo::DEMO_USER
        ),
        (false, _) => println!(
            "Log in as `{user}` with the password shown at the first demo start (forgotten? \
             `widgetd --data-dir {} user passwd {user}` prints a new one).",
            dir.display(),
            user = crate::demo::DEMO_USER
        ),
    }
    Ok(tokio::spawn(crate::demo::run(state.clone(), session)))
}

/// The first admin, created on a data dir without users.
enum Bootstrap {
    /// Users existed already.
    NotNeeded,
    /// Created with `WIDGETD_ADMIN_PASSWORD`.
    GivenPassword,
    /// Created with this random password, to be printed once.
    Generated(SecretString),
}

/// On a data dir without users, creates `admin` with `WIDGETD_ADMIN_PASSWORD`
/// or a random password.
async fn bootstrap_admin(data: &DataDir) -> anyhow::Result<Bootstrap> {
    // Alone: two daemons starting together on one database make one admin.
    let mut tx = data.db.begin_write_exclusive().await?;
    if auth::count_users(&mut tx).await? > 0 {
        return Ok(Bootstrap::NotNeeded);
    }
    let (password, outcome) = match std::env::var("WIDGETD_ADMIN_PASSWORD") {
        Ok(given) => (SecretString::from(given), Bootstrap::GivenPassword),
        Err(_) => {
            let password = passwords::generate();
            let shown = SecretString::from(password.expose_secret());
            (password, Bootstrap::Generated(shown))
        }
    };
    auth::create_user(&mut tx, "admin", Role::Admin, password)
        .await
        .context(
            "cannot create the first admin (check WIDGETD_ADMIN_PASSWORD: at least 12 characters)",
        )?;
    widgetd_domain::audit::append_by_operator(
        &mut tx,
        Entry {
            action: "user.add",
            detail: Some("user=admin; role=admin; first start".into()),
            ..Default::default()
        },
    )
    .await?;
    tx.commit().await?;
    Ok(outcome)
}

fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?;
    Ok(async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        tracing::info!("shutting down: finishing requests in flight");
    })
}
