//! Password hashing: argon2id at the OWASP minimum (19 MiB, t=2, p=1).

use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use argon2::{Algorithm, Argon2, Params, Version};
use secrecy::{ExposeSecret, SecretString};

use crate::crypto::random_bytes;
use crate::error::{Error, Result};

/// Shortest password accepted.
pub const MIN_PASSWORD_LEN: usize = 12;
/// Longest password accepted, in characters.
pub const MAX_PASSWORD_LEN: usize = 1024;

fn hasher() -> Argon2<'static> {
    let params = Params::new(19 * 1024, 2, 1, None).expect("valid argon2 parameters");
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// Refuses passwords that are too short or absurdly long, without echoing them.
pub fn check_policy(password: &SecretString) -> Result<()> {
    let len = password.expose_secret().chars().count();
    if len < MIN_PASSWORD_LEN {
        return Err(Error::invalid(
            "weak_password",
            format!("passwords need at least {MIN_PASSWORD_LEN} characters"),
        ));
    }
    if len > MAX_PASSWORD_LEN {
        return Err(Error::invalid(
            "password_too_long",
            format!("passwords may have at most {MAX_PASSWORD_LEN} characters"),
        ));
    }
    Ok(())
}

/// The PHC string of a new argon2id hash with a random salt. CPU-heavy: call
/// it from a blocking thread in async code.
pub fn hash(password: &SecretString) -> String {
    let hash: PasswordHash = hasher()
        .hash_password(password.expose_secret().as_bytes())
        .expect("argon2id with valid parameters cannot fail");
    hash.to_string()
}

/// Whether `password` matches the stored PHC string.
pub fn verify(password: &SecretString, phc: &str) -> bool {
    PasswordHash::new(phc)
        .map(|parsed| {
            hasher()
                .verify_password(password.expose_secret().as_bytes(), &parsed)
                .is_ok()
        })
        .unwrap_or(false)
}

/// Argon2 runs at most this many at once: each takes 19 MiB and a core, so
/// a burst of logins queues instead of growing memory with the burst.
static HASHING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);

/// [`hash`] on a blocking thread, at most two at a time.
pub async fn hash_async(password: SecretString) -> crate::error::Result<String> {
    let _permit = HASHING.acquire().await.map_err(|e| anyhow::anyhow!(e))?;
    tokio::task::spawn_blocking(move || hash(&password))
        .await
        .map_err(|e| crate::error::Error::Internal(e.into()))
}

/// [`verify`] on a blocking thread, at most two at a time.
pub async fn verify_async(password: SecretString, phc: String) -> crate::error::Result<bool> {
    let _permit = HASHING.acquire().await.map_err(|e| anyhow::anyhow!(e))?;
    tokio::task::spawn_blocking(move || verify(&password, &phc))
        .await
        .map_err(|e| crate::error::Error::Internal(e.into()))
}

/// A hash of a random password, verified against when a login names an
/// unknown user so that the answer takes as long as for a known one.
pub static DUMMY_HASH: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| hash(&generate()));

/// A random password of 24 URL-safe characters (144 bits), for new accounts.
pub fn generate() -> SecretString {
    use base64::Engine;
    let bytes = random_bytes::<18>();
    SecretString::from(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_verify_and_use_argon2id_at_owasp_minimum() {
        let password = SecretString::from("correct horse battery");
        let phc = hash(&password);
        assert!(phc.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{phc}");
        assert!(verify(&password, &phc));
        assert!(!verify(&SecretString::from("wrong horse battery"), &phc));
        assert!(!verify(&password, "not a hash"));
    }

    #[test]
    fn policy_refuses_short_passwords() {
        assert!(check_policy(&SecretString::from("short")).is_err());
        assert!(check_policy(&generate()).is_ok());
    }
}
