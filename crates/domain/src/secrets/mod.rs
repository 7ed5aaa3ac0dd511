//! The env var vault: values encrypted per row, owned by a user, scoped
//! globally or to one session, and the effective env that a session's next
//! agent turn receives.

mod names;
mod store;

/// Records a change to a user's vault: names and scope, never the value.
pub async fn audit_env(
    tx: &mut crate::db::WriteTx,
    action: &'static str,
    user: &UserId,
    client: &crate::audit::ClientAddr,
    target: &Target,
    name: &EnvVarName,
) -> sqlx::Result<()> {
    let entry = crate::audit::Entry {
        action,
        session: target.session(),
        names: Some(name.to_string()),
        scope: Some(target.scope()),
        ..Default::default()
    };
    crate::audit::append(tx, &crate::audit::Actor::User(user.clone()), client, entry).await
}

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;
use sqlx::AnyConnection;
use tracing::instrument;

pub use names::{EnvVarName, MAX_VALUE_BYTES, SecretValue};

use crate::clock;
use crate::crypto::{CryptoError, DataKey, Keyring, aad};
use crate::db::Dialect;
use crate::error::{Error, Result};
use crate::ids::{SessionId, UserId};
use store::{NewValue, StoredValue};

const ENV_AAD: &str = "widgetd/env/v1";

/// Where a value applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Every session of the owner.
    Global,
    /// One session; overrides a global value of the same name.
    Session(SessionId),
}

impl Target {
    /// The session of a session-scoped target.
    pub fn session(&self) -> Option<&SessionId> {
        match self {
            Self::Global => None,
            Self::Session(id) => Some(id),
        }
    }

    /// `global` or `session`, as shown to people and agents.
    pub fn scope(&self) -> &'static str {
        match self {
            Self::Global => "global",
            Self::Session(_) => "session",
        }
    }
}

/// The AAD that binds a ciphertext to its row: owner, scope, session, name
/// and key. A ciphertext moved to any other row fails to open.
fn row_aad(owner: &UserId, session: Option<&SessionId>, name: &str, key_id: i64) -> Vec<u8> {
    let scope = if session.is_some() {
        "session"
    } else {
        "global"
    };
    let session = session.map(SessionId::as_str).unwrap_or_default();
    aad(
        ENV_AAD,
        &[
            owner.as_str().as_bytes(),
            scope.as_bytes(),
            session.as_bytes(),
            name.as_bytes(),
            &key_id.to_be_bytes(),
        ],
    )
}

/// Encrypts and stores `value`, replacing any value at the same place. Call
/// inside a write transaction.
///
/// Sealed first under the newest data key this process knows, stored only
/// if that key is still the newest (checked in the storing statement, so a
/// key rotated by another process is used from its commit on); else sealed
/// again under the newest key read from the database.
#[instrument(skip_all)]
pub async fn set_value(
    conn: &mut AnyConnection,
    keyring: &Keyring,
    owner: &UserId,
    target: &Target,
    name: &EnvVarName,
    value: &SecretValue,
    actor: &UserId,
) -> Result<()> {
    let session = target.session();
    let put = async |conn: &mut AnyConnection, key: &DataKey, if_newest_key: bool| {
        let sealed = key.seal(
            &row_aad(owner, session, name.as_str(), key.id),
            value.expose().as_bytes(),
        );
        let row = NewValue {
            owner,
            session,
            name: name.as_str(),
            key_id: key.id,
            nonce: &sealed.nonce,
            ciphertext: &sealed.ciphertext,
            actor,
            now: clock::now_ms(),
        };
        store::put(conn, &row, if_newest_key).await
    };
    if let Some(key) = keyring.newest_known()
        && put(conn, &key, true).await?
    {
        return Ok(());
    }
    let key = keyring.for_write(conn).await.map_err(keyring_error)?;
    put(conn, &key, false).await?;
    Ok(())
}

/// Deletes a value if there is one; returns whether there was.
pub async fn delete_if_present(
    conn: &mut AnyConnection,
    owner: &UserId,
    target: &Target,
    name: &EnvVarName,
) -> Result<bool> {
    Ok(store::delete(conn, owner, target.session(), name.as_str()).await?)
}

/// Deletes a value; 404 when there was none at that place.
pub async fn delete_value(
    conn: &mut AnyConnection,
    owner: &UserId,
    target: &Target,
    name: &EnvVarName,
) -> Result<()> {
    if store::delete(conn, owner, target.session(), name.as_str()).await? {
        Ok(())
    } else {
        Err(Error::NotFound("env var"))
    }
}

/// A scalar subquery over a session's row, aliased `s`, in `dialect`: the
/// names that resolve in that session's effective env (its creator's global
/// values and the session's own), joined by commas (a name has none), or
/// NULL when there are none. For a statement that reads the session anyway;
/// [`names_in`] reads what it gave. Each half is a search of its scope's
/// unique index: `session_id IS NULL OR session_id = …` in one `WHERE`
/// matches neither partial index and reads every value of the owner.
pub fn effective_names_sql(dialect: Dialect) -> &'static str {
    dialect.sql().effective_names()
}

/// The names in what [`effective_names_sql`] gave.
pub fn names_in(joined: Option<&str>) -> std::collections::BTreeSet<&str> {
    joined
        .into_iter()
        .flat_map(|names| names.split(','))
        .collect()
}

/// Whether `owner` has a global value for `name`.
pub async fn has_global(
    conn: &mut AnyConnection,
    owner: &UserId,
    name: &EnvVarName,
) -> Result<bool> {
    Ok(store::has_global(conn, owner, name.as_str()).await?)
}

/// What people may see of a stored value: never the value.
#[derive(Debug, Serialize)]
pub struct EnvVarInfo {
    pub name: String,
    pub scope: &'static str,
    pub session_id: Option<SessionId>,
    pub updated_at: String,
    pub updated_by: String,
    pub key_id: i64,
}

/// The owner's values, by name then scope (global first).
pub async fn list_env_vars(conn: &mut AnyConnection, owner: &UserId) -> Result<Vec<EnvVarInfo>> {
    Ok(store::list_info(conn, owner)
        .await?
        .into_iter()
        .map(info)
        .collect())
}

/// One page of [`list_env_vars`]: (the page, how many in all).
pub async fn list_env_vars_page(
    conn: &mut AnyConnection,
    owner: &UserId,
    offset: i64,
    limit: i64,
) -> Result<(Vec<EnvVarInfo>, i64)> {
    let (rows, total) = store::list_info_page(conn, owner, offset, limit).await?;
    Ok((rows.into_iter().map(info).collect(), total))
}

fn info(row: store::InfoRow) -> EnvVarInfo {
    {
        EnvVarInfo {
            scope: if row.session_id.is_some() {
                "session"
            } else {
                "global"
            },
            name: row.name,
            session_id: row.session_id,
            updated_at: clock::rfc3339(row.updated_at),
            updated_by: row.updated_by,
            key_id: row.key_id,
        }
    }
}

/// A session's decrypted env: the owner's global values overridden by the
/// session's own. Only the executor path may ever hold one.
pub struct EffectiveEnv {
    pub values: BTreeMap<String, SecretString>,
    /// Values that exist but could not be decrypted; never silently left out.
    pub unreadable: Vec<Unreadable>,
}

/// A stored value that did not decrypt, by name, scope and reason; never
/// anything of the value.
#[derive(Debug, Clone, Serialize)]
pub struct Unreadable {
    pub name: String,
    pub scope: &'static str,
    pub reason: String,
}

/// Why one row could not be decrypted, or a failure of the database.
enum DecryptError {
    Unreadable(String),
    Database(sqlx::Error),
}

async fn decrypt(
    conn: &mut AnyConnection,
    keyring: &Keyring,
    row: &StoredValue,
) -> Result<SecretString> {
    decrypt_row(conn, keyring, row).await.map_err(|e| match e {
        DecryptError::Database(e) => Error::Database(e),
        DecryptError::Unreadable(_) => Error::Crypto(CryptoError::Open),
    })
}

async fn decrypt_row(
    conn: &mut AnyConnection,
    keyring: &Keyring,
    row: &StoredValue,
) -> Result<SecretString, DecryptError> {
    use crate::crypto::KeyringError;
    let key = match keyring.get(conn, row.key_id).await {
        Ok(key) => key,
        Err(KeyringError::Database(e)) => return Err(DecryptError::Database(e)),
        Err(e) => return Err(DecryptError::Unreadable(e.to_string())),
    };
    let aad = row_aad(
        &row.owner_id,
        row.session_id.as_ref(),
        &row.name,
        row.key_id,
    );
    let unreadable = |e: CryptoError| DecryptError::Unreadable(e.to_string());
    let plain = key
        .open(&aad, &row.nonce, &row.ciphertext)
        .map_err(unreadable)?;
    let text = std::str::from_utf8(&plain).map_err(|_| unreadable(CryptoError::Open))?;
    Ok(SecretString::from(text))
}

/// The effective env of `session`, whose creator is `owner`. A value that
/// does not decrypt is listed in `unreadable` (the caller decides whether
/// the rest may be used); a database failure is an error.
#[instrument(skip_all)]
pub async fn effective_env(
    conn: &mut AnyConnection,
    keyring: &Keyring,
    owner: &UserId,
    session: &SessionId,
) -> Result<EffectiveEnv> {
    let mut env = EffectiveEnv {
        values: BTreeMap::new(),
        unreadable: Vec::new(),
    };
    for row in store::effective_rows(conn, owner, session).await? {
        // A value stored under a name that a later version blocks is never
        // handed to a process, nor left out silently.
        if EnvVarName::parse(&row.name).is_err() {
            env.unreadable.push(Unreadable {
                scope: if row.session_id.is_some() {
                    "session"
                } else {
                    "global"
                },
                name: row.name,
                reason: "the name is blocked (it could change what processes run); delete it"
                    .into(),
            });
            continue;
        }
        match decrypt_row(conn, keyring, &row).await {
            Ok(value) => {
                env.values.insert(row.name, value);
            }
            Err(DecryptError::Unreadable(reason)) => env.unreadable.push(Unreadable {
                scope: if row.session_id.is_some() {
                    "session"
                } else {
                    "global"
                },
                name: row.name,
                reason,
            }),
            Err(DecryptError::Database(e)) => return Err(e.into()),
        }
    }
    Ok(env)
}

/// Values shorter than this are not looked for in free text: "1" or "yes"
/// would refuse ordinary answers (the same floor as `exec`'s masking).
const MIN_LEAK_CHECK_BYTES: usize = 4;

/// Refuses free text meant for the agent (a typed answer, a deny reason, a
/// note) that contains one of `owner`'s stored values: it would hand the
/// agent a secret. The error names the variable, never the value.
#[instrument(skip_all)]
pub async fn refuse_stored_values(
    conn: &mut AnyConnection,
    keyring: &Keyring,
    owner: &UserId,
    texts: &[&str],
) -> Result<()> {
    if texts.iter().all(|t| t.len() < MIN_LEAK_CHECK_BYTES) {
        return Ok(());
    }
    for row in store::rows_of_owner(conn, owner).await? {
        // A value that does not decrypt cannot be compared; `GET …/env`
        // and `widgetd check` report it.
        let Ok(value) = decrypt_row(conn, keyring, &row).await else {
            continue;
        };
        let value = value.expose_secret();
        if value.len() >= MIN_LEAK_CHECK_BYTES && texts.iter().any(|t| t.contains(value)) {
            return Err(Error::invalid(
                "answer_contains_secret",
                format!(
                    "this answer contains the stored value of {}; answers are sent to the \
                     agent, so type it without the secret (the value stays where it is)",
                    row.name
                ),
            ));
        }
    }
    Ok(())
}

/// Authenticates every stored value, `batch` rows at a time, for `widgetd
/// check`: each is decrypted and dropped at once, never shown. Returns how
/// many were checked and those that failed (where they are and why, never
/// anything of the value). Calls `progress(done, total)` after each batch.
pub async fn check_values(
    conn: &mut AnyConnection,
    keyring: &Keyring,
    batch: i64,
    mut progress: impl FnMut(i64, i64),
) -> Result<(i64, Vec<BadValue>)> {
    let total = store::count_all(conn).await?;
    let (mut done, mut after, mut bad) = (0, 0, Vec::new());
    loop {
        let rows = store::rows_after(conn, after, batch).await?;
        let Some(last) = rows.last() else { break };
        after = last.id;
        for row in rows {
            if let Err(reason) = check_row(conn, keyring, &row).await? {
                bad.push(BadValue {
                    id: row.id,
                    owner_id: row.owner_id,
                    session_id: row.session_id,
                    name: row.name,
                    key_id: row.key_id,
                    reason,
                });
            }
            done += 1;
        }
        progress(done, total);
    }
    Ok((done, bad))
}

/// `Ok(Err(reason))` when the row does not decrypt; the plaintext is
/// dropped (and zeroed) at once.
async fn check_row(
    conn: &mut AnyConnection,
    keyring: &Keyring,
    row: &StoredValue,
) -> Result<Result<(), String>> {
    match decrypt_row(conn, keyring, row).await {
        Ok(_) => Ok(Ok(())),
        Err(DecryptError::Unreadable(reason)) => Ok(Err(reason)),
        Err(DecryptError::Database(e)) => Err(e.into()),
    }
}

/// A stored value that failed authentication: where it is and why.
#[derive(Debug, Serialize)]
pub struct BadValue {
    /// The `env_vars` row.
    pub id: i64,
    pub owner_id: UserId,
    pub session_id: Option<SessionId>,
    pub name: String,
    pub key_id: i64,
    pub reason: String,
}

/// Re-encrypts every value not yet under the newest data key, in batches of
/// `batch` rows per transaction so that a running daemon is never blocked
/// for long. Calls `progress(done, total)` after each batch.
#[instrument(skip_all)]
pub async fn reencrypt_all(
    db: &crate::db::Db,
    keyring: &Keyring,
    batch: i64,
    mut progress: impl FnMut(i64, i64),
) -> Result<i64> {
    let mut conn = db.read.acquire().await?;
    let newest = keyring.for_write(&mut conn).await.map_err(keyring_error)?;
    let total = store::count_not_on_key(&mut conn, newest.id).await?;
    drop(conn);
    let mut done = 0;
    loop {
        // Alone: no value is written meanwhile under the key being left.
        let mut tx = db.begin_write_exclusive().await?;
        let rows = store::rows_not_on_key(&mut tx, newest.id, batch).await?;
        if rows.is_empty() {
            break;
        }
        for row in &rows {
            let value = decrypt(&mut tx, keyring, row).await?;
            let aad = row_aad(&row.owner_id, row.session_id.as_ref(), &row.name, newest.id);
            let sealed = newest.seal(
                &aad,
                secrecy::ExposeSecret::expose_secret(&value).as_bytes(),
            );
            store::replace_ciphertext(
                &mut tx,
                row.id,
                newest.id,
                &sealed.nonce,
                &sealed.ciphertext,
            )
            .await?;
        }
        tx.commit().await?;
        done += i64::try_from(rows.len()).expect("batch fits i64");
        progress(done, total);
    }
    Ok(done)
}

fn keyring_error(err: crate::crypto::KeyringError) -> Error {
    Error::Internal(err.into())
}
