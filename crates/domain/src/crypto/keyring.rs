//! Data keys: created, wrapped by the KEK, cached unwrapped in memory.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, RwLock};

use aes_gcm::Aes256Gcm;
use serde::Serialize;
use sqlx::AnyConnection;
use zeroize::Zeroizing;

use super::store::{self, WrappedKey};
use super::{
    CryptoError, MasterKey, MasterKeySource, Sealed, aad, cipher, open, random_bytes, seal,
};
use crate::clock;

const KEYRING_AAD: &str = "widgetd/keyring/v1";

/// One unwrapped data key. Not `Clone`, not printable.
pub struct DataKey {
    pub id: i64,
    cipher: Aes256Gcm,
}

impl fmt::Debug for DataKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DataKey({}, [REDACTED])", self.id)
    }
}

impl DataKey {
    /// Encrypts with a fresh random nonce.
    pub fn seal(&self, aad: &[u8], plaintext: &[u8]) -> Sealed {
        seal(&self.cipher, aad, plaintext)
    }

    /// Decrypts and authenticates; any mismatch is the same generic error.
    pub fn open(
        &self,
        aad: &[u8],
        nonce: &[u8],
        ciphertext: &[u8],
    ) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
        open(&self.cipher, aad, nonce, ciphertext)
    }
}

/// Why the keyring could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum KeyringError {
    #[error(
        "the master key from {key_source} does not match this data dir (it cannot unwrap data key {key_id}). \
         Start with the master key this data dir was created with; nothing was changed"
    )]
    WrongMasterKey {
        key_id: i64,
        key_source: MasterKeySource,
    },
    #[error(
        "data key {0} was wrapped by a different master key (was `keys rekey` run while this \
         process was running?); restart it with the current master key"
    )]
    ForeignKey(i64),
    #[error(transparent)]
    Crypto(#[from] CryptoError),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// A data key's place in `keys status`.
#[derive(Debug, Serialize)]
pub struct KeyringStatus {
    pub key_id: i64,
    pub created_at: String,
    pub env_vars: i64,
    pub newest: bool,
}

/// The key-encryption key and the data keys it unwrapped.
pub struct Keyring {
    kek: Aes256Gcm,
    keys: RwLock<BTreeMap<i64, Arc<DataKey>>>,
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Keyring([REDACTED])")
    }
}

fn wrap_aad(key_id: i64) -> Vec<u8> {
    aad(KEYRING_AAD, &[&key_id.to_be_bytes()])
}

fn unwrap_key(kek: &Aes256Gcm, stored: &WrappedKey) -> Result<DataKey, CryptoError> {
    let bytes = open(
        kek,
        &wrap_aad(stored.key_id),
        &stored.nonce,
        &stored.wrapped_key,
    )?;
    let bytes: &[u8; 32] = bytes.as_slice().try_into().map_err(|_| CryptoError::Open)?;
    Ok(DataKey {
        id: stored.key_id,
        cipher: cipher(bytes),
    })
}

fn wrap_key(kek: &Aes256Gcm, key_id: i64, key: &[u8; 32]) -> WrappedKey {
    let sealed = seal(kek, &wrap_aad(key_id), key);
    WrappedKey {
        key_id,
        nonce: sealed.nonce,
        wrapped_key: sealed.ciphertext,
        created_at: clock::now_ms(),
    }
}

impl Keyring {
    /// Unwraps every stored data key with `master`. Reads only: a wrong
    /// master key fails here, before anything is written.
    pub async fn load(
        conn: &mut AnyConnection,
        master: &MasterKey,
        source: &MasterKeySource,
    ) -> Result<Self, KeyringError> {
        let kek = master.kek();
        let mut keys = BTreeMap::new();
        for stored in store::list(conn).await? {
            let key = unwrap_key(&kek, &stored).map_err(|_| KeyringError::WrongMasterKey {
                key_id: stored.key_id,
                key_source: source.clone(),
            })?;
            keys.insert(key.id, Arc::new(key));
        }
        Ok(Self {
            kek,
            keys: RwLock::new(keys),
        })
    }

    /// Unwraps every data key that `master` can unwrap and names those it
    /// cannot (wrong master key, or an altered keyring row), instead of
    /// stopping at the first: `widgetd check` reports each.
    pub async fn load_checked(
        conn: &mut AnyConnection,
        master: &MasterKey,
    ) -> sqlx::Result<(Self, Vec<i64>)> {
        let kek = master.kek();
        let mut keys = BTreeMap::new();
        let mut failed = Vec::new();
        for stored in store::list(conn).await? {
            match unwrap_key(&kek, &stored) {
                Ok(key) => {
                    keys.insert(key.id, Arc::new(key));
                }
                Err(_) => failed.push(stored.key_id),
            }
        }
        let keyring = Self {
            kek,
            keys: RwLock::new(keys),
        };
        Ok((keyring, failed))
    }

    /// Data keys that stored ciphertexts name but the keyring lacks (a
    /// deleted keyring row), with how many ciphertexts each: those cannot
    /// be decrypted by anyone.
    pub async fn missing_keys(conn: &mut AnyConnection) -> sqlx::Result<Vec<(i64, i64)>> {
        store::missing(conn).await
    }

    /// Whether no data key exists yet (a brand-new data dir).
    pub fn is_empty(&self) -> bool {
        self.keys.read().expect("keyring lock").is_empty()
    }

    /// Creates a new data key that becomes the one new writes use.
    pub async fn rotate(&self, conn: &mut AnyConnection) -> sqlx::Result<i64> {
        let key_id = store::newest_id(conn).await?.unwrap_or(0) + 1;
        let material = random_bytes::<32>();
        store::insert(conn, &wrap_key(&self.kek, key_id, &material)).await?;
        let key = Arc::new(DataKey {
            id: key_id,
            cipher: cipher(&material),
        });
        self.keys.write().expect("keyring lock").insert(key_id, key);
        Ok(key_id)
    }

    /// The newest data key this process knows, without asking the
    /// database. Another process (`keys rotate`) may have added a newer one
    /// since: a write under it must check, in its own statement, that it is
    /// still the newest (as `secrets::set_value` does), and fall back to
    /// [`Self::for_write`] when not.
    pub fn newest_known(&self) -> Option<Arc<DataKey>> {
        let keys = self.keys.read().expect("keyring lock");
        keys.last_key_value().map(|(_, key)| key.clone())
    }

    /// The newest data key, for a new write. Another process (`keys rotate`)
    /// may have added one since start, so the newest id is read each time.
    pub async fn for_write(&self, conn: &mut AnyConnection) -> Result<Arc<DataKey>, KeyringError> {
        let newest = store::newest_id(conn).await?.unwrap_or(0);
        self.get(conn, newest).await
    }

    /// The data key `key_id`, loading keys added by another process if needed.
    pub async fn get(
        &self,
        conn: &mut AnyConnection,
        key_id: i64,
    ) -> Result<Arc<DataKey>, KeyringError> {
        if let Some(key) = self.keys.read().expect("keyring lock").get(&key_id) {
            return Ok(key.clone());
        }
        let known = self
            .keys
            .read()
            .expect("keyring lock")
            .keys()
            .max()
            .copied()
            .unwrap_or(0);
        for stored in store::list_newer(conn, known).await? {
            // A key wrapped under another master (a `keys rekey` done while
            // this process runs) cannot be used; say so instead of guessing.
            let key = unwrap_key(&self.kek, &stored)
                .map_err(|_| KeyringError::ForeignKey(stored.key_id))?;
            self.keys
                .write()
                .expect("keyring lock")
                .insert(key.id, Arc::new(key));
        }
        self.keys
            .read()
            .expect("keyring lock")
            .get(&key_id)
            .cloned()
            .ok_or(KeyringError::Crypto(CryptoError::UnknownKey(key_id)))
    }

    /// Every key with how many values it still encrypts.
    pub async fn status(conn: &mut AnyConnection) -> sqlx::Result<Vec<KeyringStatus>> {
        let rows = store::usage(conn).await?;
        let newest = rows.last().map(|r| r.0);
        Ok(rows
            .into_iter()
            .map(|(key_id, created_at, env_vars)| KeyringStatus {
                key_id,
                created_at: clock::rfc3339(created_at),
                env_vars,
                newest: Some(key_id) == newest,
            })
            .collect())
    }
}

/// Rewraps every data key from `old` to `new` master key. Run it inside a
/// transaction: either every key moves or none does. Returns how many.
pub async fn rewrap_keyring(
    conn: &mut AnyConnection,
    old: &MasterKey,
    new: &MasterKey,
) -> Result<usize, KeyringError> {
    let (old_kek, new_kek) = (old.kek(), new.kek());
    let stored = store::list(conn).await?;
    for key in &stored {
        let bytes = open(
            &old_kek,
            &wrap_aad(key.key_id),
            &key.nonce,
            &key.wrapped_key,
        )
        .map_err(|_| KeyringError::ForeignKey(key.key_id))?;
        let bytes: &[u8; 32] = bytes.as_slice().try_into().expect("data keys are 32 bytes");
        let mut rewrapped = wrap_key(&new_kek, key.key_id, bytes);
        rewrapped.created_at = key.created_at;
        store::update(conn, &rewrapped).await?;
    }
    Ok(stored.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_names_the_key_and_hides_the_material() {
        let material = random_bytes::<32>();
        let key = DataKey {
            id: 7,
            cipher: cipher(&material),
        };
        assert_eq!(format!("{key:?}"), "DataKey(7, [REDACTED])");
        let keyring = Keyring {
            kek: MasterKey::generate().kek(),
            keys: RwLock::new(BTreeMap::from([(7, Arc::new(key))])),
        };
        assert_eq!(format!("{keyring:?}"), "Keyring([REDACTED])");
        assert_eq!(format!("{keyring:#?}"), "Keyring([REDACTED])");
    }
}
