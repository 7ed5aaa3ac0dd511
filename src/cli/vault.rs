//! `widgetd env …` and `widgetd keys …`: a user's values and the keys
//! that encrypt them, on the data dir directly (audited with actor `cli`).

use std::io::Read;

use anyhow::Context;
use secrecy::SecretString;
use zeroize::Zeroizing;

use super::{EnvCommand, KeysCommand};
use widgetd_domain::audit::Entry;
use widgetd_domain::auth::{self};
use widgetd_domain::crypto::{Keyring, MasterKey, MasterKeySource, rewrap_keyring};
use widgetd_domain::ids::SessionId;
use widgetd_domain::secrets::{self, EnvVarName, SecretValue, Target};
use widgetd_domain::sessions;
use widgetd_domain::startup::DataDir;

fn target_of(session: Option<String>) -> anyhow::Result<Target> {
    match session {
        None => Ok(Target::Global),
        Some(id) => Ok(Target::Session(
            SessionId::parse(&id).context("--session takes a session id (a UUID)")?,
        )),
    }
}

pub(super) async fn env(data: &DataDir, cmd: EnvCommand) -> anyhow::Result<()> {
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
            widgetd_domain::audit::append_by_operator(
                &mut tx,
                env_entry("env.set", &target, &name, &user),
            )
            .await?;
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
            widgetd_domain::audit::append_by_operator(
                &mut tx,
                env_entry("env.delete", &target, &name, &user),
            )
            .await?;
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

pub(super) async fn keys(data: &DataDir, cmd: KeysCommand) -> anyhow::Result<()> {
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
            let mut tx = data.db.begin_write_exclusive().await?;
            let id = data.keyring.rotate(&mut tx).await?;
            widgetd_domain::audit::append_by_operator(
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
            widgetd_domain::audit::append_by_operator(
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
    let mut tx = data.db.begin_write_exclusive().await?;
    let count = rewrap_keyring(&mut tx, &data.master, new).await?;
    widgetd_domain::audit::append_by_operator(
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
