//! `widgetd user …` and `widgetd token …`: people and their API tokens,
//! on the data dir directly (audited with actor `cli`).

use anyhow::Context;
use secrecy::{ExposeSecret, SecretString};
use serde_json::json;
use zeroize::Zeroizing;

use super::{TokenCommand, UserCommand};
use widgetd_domain::audit::Entry;
use widgetd_domain::auth::{self, passwords, tokens::TokenScopes};
use widgetd_domain::clock;
use widgetd_domain::ids::TokenId;
use widgetd_domain::startup::DataDir;

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

pub(super) async fn user(data: &DataDir, cmd: UserCommand) -> anyhow::Result<()> {
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
            widgetd_domain::audit::append_by_operator(
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
            widgetd_domain::audit::append_by_operator(
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

pub(super) async fn token(data: &DataDir, cmd: TokenCommand) -> anyhow::Result<()> {
    let mut tx = data.db.begin_write().await?;
    match cmd {
        TokenCommand::Create { user, scope, json } => {
            let scopes = TokenScopes::parse(&scope)?;
            let owner = auth::find_user(&mut tx, &user).await?;
            let (id, token) = auth::create_api_token(&mut tx, &owner.id, &scopes).await?;
            widgetd_domain::audit::append_by_operator(
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
            widgetd_domain::audit::append_by_operator(
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
