//! The master key: from `WIDGETD_MASTER_KEY` (base64 of 32 bytes) or a key
//! file in the data dir, created with mode 0600 on first start.

use std::fmt;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use aes_gcm::Aes256Gcm;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hkdf::Hkdf;
use sha2::Sha256;
use zeroize::Zeroizing;

use super::{cipher, random_bytes};

/// File name of the master key inside the data dir.
pub const MASTER_KEY_FILE: &str = "master.key";

/// 32 secret bytes. No `Clone`, `Display` or `Serialize`; `Debug` is redacted.
pub struct MasterKey(Zeroizing<[u8; 32]>);

/// Where the master key came from, so that messages can say what to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MasterKeySource {
    Env,
    File(PathBuf),
}

impl fmt::Display for MasterKeySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Env => f.write_str("WIDGETD_MASTER_KEY"),
            Self::File(path) => write!(f, "the key file {}", path.display()),
        }
    }
}

/// Why a master key could not be had. Never contains key material.
#[derive(Debug, thiserror::Error)]
pub enum MasterKeyError {
    #[error("{0} is not valid: expected the base64 encoding of exactly 32 bytes")]
    Malformed(MasterKeySource),
    #[error(
        "{0} is readable by other users; run `chmod 600` on it (widgetd refuses to use a key others can read)"
    )]
    Permissions(MasterKeySource),
    #[error("cannot read or write {0}: {1}")]
    Io(MasterKeySource, std::io::Error),
}

impl fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MasterKey([REDACTED])")
    }
}

impl MasterKey {
    /// A new random master key.
    pub fn generate() -> Self {
        Self(random_bytes::<32>())
    }

    /// Parses base64 text (surrounding white space ignored).
    pub fn from_base64(text: &str, source: MasterKeySource) -> Result<Self, MasterKeyError> {
        let decoded = Zeroizing::new(
            STANDARD
                .decode(text.trim())
                .map_err(|_| MasterKeyError::Malformed(source.clone()))?,
        );
        let bytes: [u8; 32] = decoded
            .as_slice()
            .try_into()
            .map_err(|_| MasterKeyError::Malformed(source))?;
        Ok(Self(Zeroizing::new(bytes)))
    }

    /// The base64 text of the key, for the key file or for an operator.
    pub fn to_base64(&self) -> Zeroizing<String> {
        Zeroizing::new(STANDARD.encode(self.0.as_ref()))
    }

    /// Reads the key file. `Ok(None)` when it does not exist.
    pub fn read_file(path: &Path) -> Result<Option<Self>, MasterKeyError> {
        let source = MasterKeySource::File(path.to_owned());
        let meta = match std::fs::metadata(path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(MasterKeyError::Io(source, e)),
        };
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(MasterKeyError::Permissions(source));
        }
        let text = Zeroizing::new(
            std::fs::read_to_string(path).map_err(|e| MasterKeyError::Io(source.clone(), e))?,
        );
        Self::from_base64(&text, source).map(Some)
    }

    /// Writes the key to a new file with mode 0600, failing if it exists.
    pub fn write_new_file(&self, path: &Path) -> Result<(), MasterKeyError> {
        let source = MasterKeySource::File(path.to_owned());
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| MasterKeyError::Io(source.clone(), e))?;
        let mut text = self.to_base64();
        text.push('\n');
        file.write_all(text.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| MasterKeyError::Io(source, e))
    }

    /// The key-encryption key. HKDF with a fixed salt and a versioned label,
    /// so that the master key is never used directly as an AES key.
    pub(super) fn kek(&self) -> Aes256Gcm {
        let hkdf = Hkdf::<Sha256>::new(Some(b"widgetd"), self.0.as_ref());
        let mut kek = Zeroizing::new([0u8; 32]);
        hkdf.expand(b"widgetd/kek/v1", kek.as_mut())
            .expect("32 bytes is a valid HKDF length");
        cipher(&kek)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trip_and_malformed_keys() {
        let key = MasterKey::generate();
        let again = MasterKey::from_base64(&key.to_base64(), MasterKeySource::Env).unwrap();
        assert_eq!(*key.0, *again.0);
        assert!(MasterKey::from_base64("not base64!", MasterKeySource::Env).is_err());
        assert!(MasterKey::from_base64(&STANDARD.encode([7u8; 31]), MasterKeySource::Env).is_err());
        assert_eq!(format!("{key:?}"), "MasterKey([REDACTED])");
    }

    #[test]
    fn sources_are_named_for_the_operator() {
        assert_eq!(MasterKeySource::Env.to_string(), "WIDGETD_MASTER_KEY");
        let file = MasterKeySource::File(PathBuf::from("/data/master.key"));
        assert_eq!(file.to_string(), "the key file /data/master.key");
    }

    #[test]
    fn the_key_file_is_written_once_private_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(MASTER_KEY_FILE);
        assert!(MasterKey::read_file(&path).unwrap().is_none());

        let key = MasterKey::generate();
        key.write_new_file(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let read = MasterKey::read_file(&path)
            .unwrap()
            .expect("the file exists");
        assert_eq!(*read.0, *key.0);
        assert!(matches!(
            MasterKey::generate().write_new_file(&path),
            Err(MasterKeyError::Io(..))
        ));

        // Readable by others: refused.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert!(matches!(
            MasterKey::read_file(&path),
            Err(MasterKeyError::Permissions(_))
        ));
        // Another failure than a missing file is an error, not "no key".
        let under_a_file = path.join("key");
        assert!(matches!(
            MasterKey::read_file(&under_a_file),
            Err(MasterKeyError::Io(..))
        ));
    }
}
