//! Bearer tokens: 256 random bits, shown once, stored as SHA-256.

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use secrecy::SecretString;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::crypto::random_bytes;
use crate::error::{Error, Result};

/// Prefix of API tokens (user credentials for agent hosts and scripts).
pub const API_TOKEN_PREFIX: &str = "wdt_";
/// Prefix of agent tokens (one session, never a value).
pub const AGENT_TOKEN_PREFIX: &str = "wda_";

/// What an API token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum TokenScope {
    /// Create sessions and drive them as their agent host.
    #[serde(rename = "sessions")]
    Sessions,
    /// Read the decrypted effective env of one's own sessions.
    #[serde(rename = "env:read")]
    EnvRead,
    /// Set and delete one's own env vars.
    #[serde(rename = "env:write")]
    EnvWrite,
}

impl TokenScope {
    const ALL: [TokenScope; 3] = [Self::Sessions, Self::EnvRead, Self::EnvWrite];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sessions => "sessions",
            Self::EnvRead => "env:read",
            Self::EnvWrite => "env:write",
        }
    }
}

impl fmt::Display for TokenScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A non-empty set of scopes, as given to `token create --scope a,b`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TokenScopes(Vec<TokenScope>);

impl TokenScopes {
    /// Parses a comma-separated list; unknown scopes are refused by name.
    pub fn parse(text: &str) -> Result<Self> {
        let mut scopes = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let scope = TokenScope::ALL.into_iter().find(|s| s.as_str() == part).ok_or_else(|| {
                Error::invalid(
                    "invalid_scope",
                    format!("unknown token scope `{part}`; the scopes are sessions, env:read, env:write"),
                )
            })?;
            scopes.push(scope);
        }
        scopes.sort();
        scopes.dedup();
        if scopes.is_empty() {
            return Err(Error::invalid(
                "invalid_scope",
                "give at least one scope: sessions, env:read, env:write",
            ));
        }
        Ok(Self(scopes))
    }

    pub fn contains(&self, scope: TokenScope) -> bool {
        self.0.contains(&scope)
    }
}

impl fmt::Display for TokenScopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|s| s.as_str()).collect();
        f.write_str(&names.join(","))
    }
}

/// A new token and the hash under which it is stored.
pub struct NewToken {
    pub token: SecretString,
    pub hash: Vec<u8>,
}

/// A fresh random token with the given prefix.
pub fn generate(prefix: &str) -> NewToken {
    let bytes = random_bytes::<32>();
    let token = format!("{prefix}{}", URL_SAFE_NO_PAD.encode(bytes.as_ref()));
    let hash = hash(&token);
    NewToken {
        token: SecretString::from(token),
        hash,
    }
}

/// SHA-256 of a presented token, the key it is looked up by.
pub fn hash(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret;

    #[test]
    fn scopes_parse_sorted_and_refuse_unknown() {
        let scopes = TokenScopes::parse("env:read, sessions,env:read").unwrap();
        assert_eq!(scopes.to_string(), "sessions,env:read");
        assert!(TokenScopes::parse("env:admin").is_err());
        assert!(TokenScopes::parse(" , ").is_err());
    }

    #[test]
    fn tokens_are_long_random_and_hashed() {
        let a = generate(API_TOKEN_PREFIX);
        let b = generate(API_TOKEN_PREFIX);
        assert!(a.token.expose_secret().starts_with("wdt_"));
        assert_eq!(a.token.expose_secret().len(), 4 + 43);
        assert_ne!(a.token.expose_secret(), b.token.expose_secret());
        assert_eq!(a.hash, hash(a.token.expose_secret()));
    }
}
