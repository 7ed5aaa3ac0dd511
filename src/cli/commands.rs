//! What each command does. Thin: parse, call the library, print.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use secrecy::{ExposeSecret, SecretString};
use serde_json::json;
use tokio::net::TcpListener;
use zeroize::Zeroizing;

use super::{
    AuditCommand, Cli, Command, DbCommand, EnvCommand, KeysCommand, ServeArgs, SessionCommand,
    TokenCommand, UserCommand,
};
use crate::audit::{self, Actor, ClientAddr, Entry};
use crate::auth::{self, Role, passwords, tokens::TokenScopes};
use crate::crypto::{Keyring, MasterKey, MasterKeySource, rewrap_keyring};
use crate::db::{DB_FILE, DatabaseUrl, Db};
use crate::exec::{self, ExecOptions};
use crate::ids::{SessionId, TokenId};
use crate::secrets::{self, EnvVarName, SecretValue, Target};
use crate::startup::{self, DataDir};
use crate::web::DbSessionStore;
use crate::{AppState, Settings, clock, sessions, widgets};

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
            return backup(&dir, database.as_ref(), &path).await.map(|()| 0);
        }
        Command::Restore {
            backup,
            key_file,
            force,
        } => return restore(&dir, database.as_ref(), &backup, key_file.as_deref(), force).await,
        Command::Db(DbCommand::Copy { from, to, json }) => {
            return copy_database(&from, &to, json).await.map(|()| 0);
        }
        Command::Check { quick, json } => return check(&dir, database.as_ref(), quick, json).await,
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
    };
    let url = database.unwrap_or_else(|| DatabaseUrl::Sqlite(dir.join(DB_FILE)));
    let data = startup::open(&dir, Some(&url)).await?;
    let db = data.db.clone();
    let result = match admin {
        Admin::User(cmd) => user(&data, cmd).await,
        Admin::Token(cmd) => token(&data, cmd).await,
        Admin::Session(cmd) => super::sessions::run(data, cmd).await,
        Admin::Env(cmd) => env(&data, cmd).await,
        Admin::Keys(cmd) => keys(&data, cmd).await,
        Admin::Audit(cmd) => audit(&data, cmd).await,
    };
    // Closing checkpoints the WAL, so the database file is complete and
    // stable once the command returns.
    db.close().await;
    result
        .map(|()| 0)
        .map_err(|e| crate::startup::explain_damage(e, &url))
}

/// The commands that work on an opened data dir.
enum Admin {
    User(UserCommand),
    Token(TokenCommand),
    Session(SessionCommand),
    Env(EnvCommand),
    Keys(KeysCommand),
    Audit(AuditCommand),
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
    let public_url = args.public_url.unwrap_or_else(|| format!("http://{addr}"));
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
    settings.prompt_tag = args.prompt_tag;
    settings.elicitation = args.elicitation;
    settings.widget_ttl_ms =
        i64::try_from(args.widget_ttl_secs.saturating_mul(1000)).unwrap_or(i64::MAX);
    settings
        .mcp_allowed_hosts
        .extend(args.mcp_allowed_hosts.into_iter().filter(|h| !h.is_empty()));
    let state = AppState::new(data.db, data.keyring, settings);
    // Stopped before the pool closes, so none of them meets a closed pool
    // (a webhook cut off mid-send stays due and is sent again later).
    let mut jobs = vec![
        tokio::spawn(background_jobs(
            state.clone(),
            Duration::from_secs(args.sweep_secs.max(1)),
        )),
        tokio::spawn(crate::webhooks::delivery::run(state.clone())),
    ];
    if args.demo {
        jobs.push(start_demo(&state).await?);
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
async fn start_demo(state: &AppState) -> anyhow::Result<tokio::task::JoinHandle<()>> {
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
            "Log in as `{}` with the password shown at the first demo start.",
            crate::demo::DEMO_USER
        ),
    }
    Ok(tokio::spawn(crate::demo::run(state.clone(), session)))
}

/// Expires widgets and deletes expired browser sessions, every `every`.
async fn background_jobs(state: AppState, every: Duration) {
    let sessions = DbSessionStore::new(state.db.clone());
    loop {
        // One daemon of a deployment sweeps at a time (on PostgreSQL an
        // advisory lock; the guarded transitions make a second sweep harmless
        // anyway, but it would only repeat the first one's reads).
        let swept = state
            .db
            .exclusively("sweep", sweep(&state, &sessions))
            .await;
        if let Err(err) = swept {
            tracing::error!(error = %err, "the sweep failed; retrying later");
        }
        tokio::time::sleep(every).await;
    }
}

/// One round of the background sweep: due widgets expire, expired browser
/// sessions and idle rate-limit buckets are deleted.
async fn sweep(state: &AppState, sessions: &DbSessionStore) -> anyhow::Result<()> {
    match widgets::expire_due(state).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(expired = n, "expired pending widgets"),
        Err(err) => tracing::error!(error = %err, "the expiry sweep failed; retrying later"),
    }
    if let Err(err) = sessions.delete_expired().await {
        tracing::error!(error = %err, "deleting expired browser sessions failed");
    }
    let mut tx = state.db.begin_write().await?;
    crate::limits::forget_idle(&mut tx).await?;
    tx.commit().await?;
    Ok(())
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
    let mut tx = data.db.begin_write().await?;
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
    operator_audit(
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

/// A password from stdin (one line, the newline removed) or a generated one.
fn password_from(stdin: bool) -> anyhow::Result<(SecretString, bool)> {
    if !stdin {
        return Ok((passwords::generate(), true));
    }
    let mut line = Zeroizing::new(String::new());
    std::io::stdin()
        .read_line(&mut line)
        .context("cannot read the password from standard input")?;
    let password = line.strip_suffix('\n').unwrap_or(&line);
    let password = password.strip_suffix('\r').unwrap_or(password);
    Ok((SecretString::from(password), false))
}

async fn user(data: &DataDir, cmd: UserCommand) -> anyhow::Result<()> {
    let mut tx = data.db.begin_write().await?;
    match cmd {
        UserCommand::Add {
            name,
            role,
            password_stdin,
        } => {
            let (password, generated) = password_from(password_stdin)?;
            let shown = generated.then(|| SecretString::from(password.expose_secret()));
            let user = auth::create_user(&mut tx, &name, role, password).await?;
            operator_audit(
                &mut tx,
                Entry {
                    action: "user.add",
                    detail: Some(
                        format!("user={}; role={:?}", user.name, user.role).to_lowercase(),
                    ),
                    ..Default::default()
                },
            )
            .await?;
            tx.commit().await?;
            println!("added {} ({:?})", user.name, user.role);
            if let Some(p) = shown {
                println!("password (shown once): {}", p.expose_secret());
            }
        }
        UserCommand::Passwd {
            name,
            password_stdin,
        } => {
            let (password, generated) = password_from(password_stdin)?;
            let shown = generated.then(|| SecretString::from(password.expose_secret()));
            auth::set_password(&mut tx, &name, password).await?;
            operator_audit(
                &mut tx,
                Entry {
                    action: "user.passwd",
                    detail: Some(format!("user={name}")),
                    ..Default::default()
                },
            )
            .await?;
            tx.commit().await?;
            println!("password of {name} changed");
            if let Some(p) = shown {
                println!("new password (shown once): {}", p.expose_secret());
            }
        }
        UserCommand::List { json } => {
            let users = auth::list_users(&mut tx).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&users)?);
            } else {
                for u in users {
                    let state = if u.disabled { " (disabled)" } else { "" };
                    println!("{:<24} {:?}{state}", u.name, u.role);
                }
            }
        }
    }
    Ok(())
}

async fn token(data: &DataDir, cmd: TokenCommand) -> anyhow::Result<()> {
    let mut tx = data.db.begin_write().await?;
    match cmd {
        TokenCommand::Create { user, scope, json } => {
            let scopes = TokenScopes::parse(&scope)?;
            let owner = auth::find_user(&mut tx, &user).await?;
            let (id, token) = auth::create_api_token(&mut tx, &owner.id, &scopes).await?;
            operator_audit(
                &mut tx,
                Entry {
                    action: "token.create",
                    detail: Some(format!("token={id}; user={user}; scopes={scopes}")),
                    ..Default::default()
                },
            )
            .await?;
            tx.commit().await?;
            if json {
                println!(
                    "{}",
                    json!({ "token": token.expose_secret(), "id": id, "scopes": scopes })
                );
            } else {
                println!("{}", token.expose_secret());
                eprintln!("token {id} for {user} with scopes {scopes}; it is shown only this once");
            }
        }
        TokenCommand::Revoke { id } => {
            let id =
                TokenId::parse(&id).context("a token id is a UUID, as printed by `token list`")?;
            auth::revoke_api_token(&mut tx, &id).await?;
            operator_audit(
                &mut tx,
                Entry {
                    action: "token.revoke",
                    detail: Some(format!("token={id}")),
                    ..Default::default()
                },
            )
            .await?;
            tx.commit().await?;
            println!("revoked {id}");
        }
        TokenCommand::List { json } => {
            let rows = auth::list_api_tokens(&mut tx).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                for t in rows {
                    let state = if t.revoked_at.is_some() {
                        "revoked"
                    } else {
                        "live"
                    };
                    println!(
                        "{}  {:<16} {:<28} {state}  {}",
                        t.id,
                        t.user,
                        t.scopes,
                        clock::rfc3339(t.created_at)
                    );
                }
            }
        }
    }
    Ok(())
}

fn target_of(session: Option<String>) -> anyhow::Result<Target> {
    match session {
        None => Ok(Target::Global),
        Some(id) => Ok(Target::Session(
            SessionId::parse(&id).context("--session takes a session id (a UUID)")?,
        )),
    }
}

async fn env(data: &DataDir, cmd: EnvCommand) -> anyhow::Result<()> {
    let mut tx = data.db.begin_write().await?;
    match cmd {
        EnvCommand::Set {
            name,
            user,
            session,
        } => {
            let owner = auth::find_user(&mut tx, &user).await?;
            let name = EnvVarName::parse(&name)?;
            let target = target_of(session)?;
            if let Target::Session(id) = &target {
                let s = sessions::get_session(&mut tx, id).await?;
                anyhow::ensure!(
                    s.creator_id == owner.id,
                    "session {id} belongs to another user"
                );
            }
            let mut raw = Zeroizing::new(String::new());
            std::io::stdin()
                .read_to_string(&mut raw)
                .context("cannot read the value from standard input (it must be UTF-8)")?;
            let value = SecretValue::parse(&name, SecretString::from(raw.as_str()))?;
            secrets::set_value(
                &mut tx,
                &data.keyring,
                &owner.id,
                &target,
                &name,
                &value,
                &owner.id,
            )
            .await?;
            operator_audit(&mut tx, env_entry("env.set", &target, &name, &user)).await?;
            tx.commit().await?;
            println!("set {name} ({}) for {user}", target.scope());
        }
        EnvCommand::Delete {
            name,
            user,
            session,
        } => {
            let owner = auth::find_user(&mut tx, &user).await?;
            let name = EnvVarName::parse(&name)?;
            let target = target_of(session)?;
            secrets::delete_value(&mut tx, &owner.id, &target, &name).await?;
            operator_audit(&mut tx, env_entry("env.delete", &target, &name, &user)).await?;
            tx.commit().await?;
            println!("deleted {name} ({}) of {user}", target.scope());
        }
        EnvCommand::List { user, json } => {
            let owner = auth::find_user(&mut tx, &user).await?;
            let vars = secrets::list_env_vars(&mut tx, &owner.id).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&vars)?);
            } else {
                for v in vars {
                    let session = v.session_id.map(|s| s.to_string()).unwrap_or_default();
                    println!(
                        "{:<32} {:<8} {session:<36} {} by {}",
                        v.name, v.scope, v.updated_at, v.updated_by
                    );
                }
            }
        }
    }
    Ok(())
}

async fn keys(data: &DataDir, cmd: KeysCommand) -> anyhow::Result<()> {
    match cmd {
        KeysCommand::Status { json } => {
            let status = Keyring::status(&mut *data.db.read.acquire().await?).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&status)?);
            } else {
                for k in status {
                    let newest = if k.newest {
                        "  (newest: encrypts new writes)"
                    } else {
                        ""
                    };
                    println!(
                        "key {:>3}  created {}  encrypts {} value(s){newest}",
                        k.key_id, k.created_at, k.env_vars
                    );
                }
            }
        }
        KeysCommand::Rotate => {
            let mut tx = data.db.begin_write().await?;
            let id = data.keyring.rotate(&mut tx).await?;
            operator_audit(
                &mut tx,
                Entry {
                    action: "keys.rotate",
                    detail: Some(format!("key_id={id}")),
                    ..Default::default()
                },
            )
            .await?;
            tx.commit().await?;
            println!(
                "created data key {id}; new writes use it. Run `widgetd keys reencrypt` to move older values onto it."
            );
        }
        KeysCommand::Rekey { new_key_stdin } => rekey(data, new_key_stdin).await?,
        KeysCommand::Reencrypt => {
            let moved = secrets::reencrypt_all(&data.db, &data.keyring, 200, |done, total| {
                eprintln!("re-encrypted {done}/{total}");
            })
            .await?;
            let mut tx = data.db.begin_write().await?;
            operator_audit(
                &mut tx,
                Entry {
                    action: "keys.reencrypt",
                    detail: Some(format!("rows={moved}")),
                    ..Default::default()
                },
            )
            .await?;
            tx.commit().await?;
            println!("re-encrypted {moved} value(s) with the newest data key");
        }
    }
    Ok(())
}

/// Rewraps the keyring under a new master key. With a key file, the new key
/// is written beside the old one first, the database switched in one
/// transaction, then the file renamed into place; a crash in between leaves
/// `master.key.new`, which the next start picks up.
async fn rekey(data: &DataDir, new_key_stdin: bool) -> anyhow::Result<()> {
    let new = if new_key_stdin {
        let mut text = Zeroizing::new(String::new());
        std::io::stdin().read_to_string(&mut text)?;
        MasterKey::from_base64(&text, MasterKeySource::Env)
            .context("the new master key on standard input")?
    } else {
        MasterKey::generate()
    };
    match &data.master_source {
        MasterKeySource::File(path) => {
            let staged = path.with_extension("key.new");
            new.write_new_file(&staged).with_context(|| {
                format!(
                    "remove {} if a previous rekey was abandoned",
                    staged.display()
                )
            })?;
            let count = rewrap_all(data, &new).await?;
            std::fs::rename(&staged, path)
                .context("the keyring was rewrapped but the key file could not be renamed")?;
            println!(
                "rewrapped {count} data key(s) under a new master key in {}; back that file up now",
                path.display()
            );
        }
        MasterKeySource::Env => {
            let count = rewrap_all(data, &new).await?;
            println!(
                "rewrapped {count} data key(s). Set WIDGETD_MASTER_KEY to the new key before the next start:"
            );
            if !new_key_stdin {
                println!("{}", new.to_base64().as_str());
            }
        }
    }
    Ok(())
}

/// Rewraps every data key under `new` in one audited transaction.
async fn rewrap_all(data: &DataDir, new: &MasterKey) -> anyhow::Result<usize> {
    let mut tx = data.db.begin_write().await?;
    let count = rewrap_keyring(&mut tx, &data.master, new).await?;
    operator_audit(
        &mut tx,
        Entry {
            action: "keys.rekey",
            detail: Some(format!("keys={count}")),
            ..Default::default()
        },
    )
    .await?;
    tx.commit().await?;
    Ok(count)
}

async fn copy_database(from: &DatabaseUrl, to: &DatabaseUrl, json: bool) -> anyhow::Result<()> {
    eprintln!("copying {from} to {to}");
    let copied = crate::db::copy::copy(from, to).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&copied)?);
        return Ok(());
    }
    for (table, rows) in &copied.tables {
        println!("  {table:<18} {rows} row(s)");
    }
    println!(
        "copied; row counts match and the audit chain verifies ({} row(s), head {})",
        copied.audit_rows, copied.audit_head
    );
    println!("next: start the daemons with --database-url {to} and the same master key");
    Ok(())
}

async fn backup(dir: &Path, database: Option<&DatabaseUrl>, target: &Path) -> anyhow::Result<()> {
    let source = match database {
        None => dir.join(DB_FILE),
        Some(DatabaseUrl::Sqlite(path)) => path.clone(),
        Some(DatabaseUrl::Postgres(_)) => bail!(
            "`widgetd backup` copies the embedded SQLite database; back up PostgreSQL with \
             pg_dump (docs/operations.md, \"Several daemons\")"
        ),
    };
    if !source.exists() {
        bail!(
            "there is no database at {}; check --data-dir",
            source.display()
        );
    }
    let db = Db::open(&source).await?;
    db.backup(target).await?;
    db.close().await;
    println!(
        "wrote a consistent copy of {} to {}",
        source.display(),
        target.display()
    );
    println!(
        "the master key is not in it: back up {} (or WIDGETD_MASTER_KEY) separately",
        dir.join(crate::crypto::MASTER_KEY_FILE).display()
    );
    Ok(())
}

/// `widgetd restore`: the embedded database only.
async fn restore(
    dir: &Path,
    database: Option<&DatabaseUrl>,
    backup: &Path,
    key_file: Option<&Path>,
    force: bool,
) -> anyhow::Result<u8> {
    if let Some(DatabaseUrl::Postgres(_)) = database {
        bail!(
            "`widgetd restore` restores the embedded SQLite database; restore PostgreSQL with pg_restore"
        );
    }
    let report = crate::restore::run(crate::restore::RestoreOptions {
        dir,
        backup,
        key_file,
        force,
    })
    .await?;
    println!("restored {} into {}:", backup.display(), dir.display());
    for section in &report.sections {
        println!("  {:<16} {}", section.name, section.summary);
    }
    println!(
        "Start widgetd with --data-dir {}. Tokens revoked, users disabled and values changed since \
         the backup are as they were then: redo those changes (docs/operations.md).",
        dir.display()
    );
    Ok(0)
}

/// `widgetd check`: the report on stdout (or as JSON), exit 1 on problems.
async fn check(
    dir: &Path,
    database: Option<&DatabaseUrl>,
    quick: bool,
    json: bool,
) -> anyhow::Result<u8> {
    let report = crate::check::run(dir, database, quick).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        report.print();
    }
    Ok(if report.ok { 0 } else { 1 })
}

async fn audit(data: &DataDir, cmd: AuditCommand) -> anyhow::Result<()> {
    let mut conn = data.db.read.acquire().await?;
    match cmd {
        AuditCommand::List {
            since,
            session,
            json,
        } => {
            let since = since
                .map(|t| {
                    time::OffsetDateTime::parse(&t, &time::format_description::well_known::Rfc3339)
                        .map(|t| i64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap_or(0))
                        .with_context(|| format!("--since takes an RFC 3339 time such as 2026-11-22T00:00:00Z, not `{t}`"))
                })
                .transpose()?;
            let rows = crate::audit::list(&mut conn, since, session.as_deref()).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                for r in rows {
                    // Escaped: no stored text can start a line of its own
                    // and pass for another row.
                    let field = |v: &Option<String>| {
                        v.as_deref()
                            .map_or("-".into(), |t| t.escape_default().to_string())
                    };
                    println!(
                        "{:>6} {} {:<24} {:<22} session={} widget={} names={} scope={} from={} detail={}",
                        r.id,
                        clock::rfc3339(r.at),
                        r.action.escape_default(),
                        r.actor.escape_default(),
                        field(&r.session_id),
                        field(&r.widget_id),
                        field(&r.names),
                        field(&r.scope),
                        field(&r.client_addr),
                        field(&r.detail)
                    );
                }
            }
        }
        AuditCommand::Verify => match crate::audit::verify(&mut conn).await? {
            Ok(v) => println!(
                "the audit log verifies: {} row(s), chain intact; head {}",
                v.rows, v.head
            ),
            Err(broken) => bail!("{broken}"),
        },
    }
    Ok(())
}

/// Records what an operator did at the command line: actor `cli`, no
/// client address, never a value.
async fn operator_audit(conn: &mut sqlx::AnyConnection, entry: Entry<'_>) -> anyhow::Result<()> {
    audit::append(conn, &Actor::Operator, &ClientAddr::default(), entry).await?;
    Ok(())
}

/// The audit entry of an operator's change to a user's vault.
fn env_entry<'a>(
    action: &'static str,
    target: &'a Target,
    name: &EnvVarName,
    owner: &str,
) -> Entry<'a> {
    Entry {
        action,
        session: target.session(),
        names: Some(name.to_string()),
        scope: Some(target.scope()),
        detail: Some(format!("owner={owner}")),
        ..Default::default()
    }
}
