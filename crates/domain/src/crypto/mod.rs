//! Envelope encryption.
//!
//! master key (32 bytes, env or key file)
//!   └─ HKDF-SHA256 → key-encryption key (KEK), never stored
//!        └─ wraps random data keys, stored in the `keyring` table
//!             └─ AES-256-GCM over each value, fresh 96-bit nonce, AAD bound
//!                to the row identity
//!
//! Rotating a data key never touches the master; rekeying the master only
//! rewraps data keys. Nothing here derives a key per request: the KEK is
//! derived once at start and unwrapped data keys are cached.

mod keyring;
#[cfg(test)]
mod keyring_tests;
mod master;
mod store;

use aes_gcm::aead::{Aead, Payload};
use aes_gcm::{Aes256Gcm, KeyInit, Nonce};
use zeroize::Zeroizing;

pub use keyring::{DataKey, Keyring, KeyringError, KeyringStatus, rewrap_keyring};
pub use master::{MASTER_KEY_FILE, MasterKey, MasterKeyError, MasterKeySource};

/// Bytes of a GCM nonce.
pub const NONCE_LEN: usize = 12;

/// Failure to open a ciphertext. Deliberately says nothing about why.
#[derive(Debug, thiserror::Error)]
pub enum CryptoError {
    #[error("a stored secret failed authentication (altered, moved, or a different key)")]
    Open,
    #[error("the keyring has no data key {0}")]
    UnknownKey(i64),
}

/// A nonce and the ciphertext (with its tag) it sealed.
pub struct Sealed {
    pub nonce: Vec<u8>,
    pub ciphertext: Vec<u8>,
}

/// Additional authenticated data: a domain label then each part, every one
/// prefixed by its length so that no two different part lists collide.
pub fn aad(domain: &str, parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    for part in std::iter::once(domain.as_bytes()).chain(parts.iter().copied()) {
        let len = u32::try_from(part.len()).expect("AAD parts are short");
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(part);
    }
    out
}

/// Fills a buffer from the operating system's CSPRNG.
pub fn random_bytes<const N: usize>() -> Zeroizing<[u8; N]> {
    let mut bytes = Zeroizing::new([0u8; N]);
    getrandom::fill(bytes.as_mut()).expect("the OS random number generator is available");
    bytes
}

fn seal(cipher: &Aes256Gcm, aad: &[u8], plaintext: &[u8]) -> Sealed {
    let nonce = random_bytes::<NONCE_LEN>();
    let ciphertext = cipher
        .encrypt(
            &Nonce::from(*nonce),
            Payload {
                msg: plaintext,
                aad,
            },
        )
        .expect("AES-GCM encryption of an in-memory buffer cannot fail");
    Sealed {
        nonce: nonce.to_vec(),
        ciphertext,
    }
}

fn open(
    cipher: &Aes256Gcm,
    aad: &[u8],
    nonce: &[u8],
    ciphertext: &[u8],
) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
    let nonce: [u8; NONCE_LEN] = nonce.try_into().map_err(|_| CryptoError::Open)?;
    cipher
        .decrypt(
            &Nonce::from(nonce),
            Payload {
                msg: ciphertext,
                aad,
            },
        )
        .map(Zeroizing::new)
        .map_err(|_| CryptoError::Open)
}

fn cipher(key: &[u8; 32]) -> Aes256Gcm {
    Aes256Gcm::new_from_slice(key).expect("32-byte key")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aad_parts_are_length_prefixed() {
        // Without prefixes ("ab","c") and ("a","bc") would be the same bytes.
        assert_ne!(aad("d", &[b"ab", b"c"]), aad("d", &[b"a", b"bc"]));
    }

    #[test]
    fn keys_and_nonces_are_random() {
        assert_ne!(*random_bytes::<32>(), *random_bytes::<32>());
        let c = cipher(&random_bytes::<32>());
        let (a, b) = (seal(&c, b"row", b"value"), seal(&c, b"row", b"value"));
        assert_ne!(a.nonce, b.nonce);
        assert_ne!(a.ciphertext, b.ciphertext);
    }

    #[test]
    fn open_refuses_other_aad_and_altered_bytes() {
        let key = random_bytes::<32>();
        let c = cipher(&key);
        let sealed = seal(&c, b"row-1", b"value");
        assert_eq!(
            &open(&c, b"row-1", &sealed.nonce, &sealed.ciphertext).unwrap()[..],
            b"value"
        );
        assert!(open(&c, b"row-2", &sealed.nonce, &sealed.ciphertext).is_err());
        for i in 0..sealed.ciphertext.len() {
            let mut bad = sealed.ciphertext.clone();
            bad[i] ^= 1;
            assert!(open(&c, b"row-1", &sealed.nonce, &bad).is_err());
        }
    }
}
