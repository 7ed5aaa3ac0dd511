//! Env var names and values as they enter the system: parsed once at the
//! edge, valid from then on.

use std::fmt;

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use crate::error::{AppError, AppResult};

const MAX_NAME_LEN: usize = 128;
/// Largest value accepted, in bytes.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;

/// Names a process must not have overridden: they change what runs, where,
/// or how (loader paths, interpreter start-up hooks) or are widgetd's own.
const BLOCKED_NAMES: [&str; 8] = [
    "PATH",
    "HOME",
    "SHELL",
    "USER",
    "LOGNAME",
    "PWD",
    "TERM",
    "NODE_OPTIONS",
];
const BLOCKED_PREFIXES: [&str; 4] = ["LD_", "DYLD_", "PYTHON", "WIDGETD_"];

/// A valid, allowed env var name: `^[A-Z_][A-Z0-9_]*$`, at most 128 chars.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct EnvVarName(String);

impl From<EnvVarName> for String {
    fn from(name: EnvVarName) -> String {
        name.0
    }
}

impl TryFrom<String> for EnvVarName {
    type Error = AppError;
    fn try_from(name: String) -> AppResult<Self> {
        Self::parse(&name)
    }
}

impl EnvVarName {
    pub fn parse(name: &str) -> AppResult<Self> {
        let well_formed = !name.is_empty()
            && name.len() <= MAX_NAME_LEN
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
        if !well_formed {
            return Err(AppError::invalid(
                "invalid_name",
                // The name itself is not repeated: a person may have pasted
                // a value into the name field.
                format!(
                    "a name of {} characters is not a valid env var name: use 1–{MAX_NAME_LEN} characters of A–Z, 0–9 and _, not starting with a digit",
                    name.chars().count()
                ),
            ));
        }
        if BLOCKED_NAMES.contains(&name) || BLOCKED_PREFIXES.iter().any(|p| name.starts_with(p)) {
            return Err(AppError::invalid(
                "blocked_name",
                format!(
                    "`{name}` cannot be set through widgetd: it would change how processes start \
                     (blocked: {}, and names starting with {})",
                    BLOCKED_NAMES.join(", "),
                    BLOCKED_PREFIXES.join(", ")
                ),
            ));
        }
        Ok(Self(name.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for EnvVarName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A secret value: 1 byte to 64 KiB of UTF-8, kept exactly as given (never
/// trimmed). Zeroized on drop; no `Clone`, `Display` or `Serialize`, and its
/// `Debug` is redacted.
#[derive(Debug)]
pub struct SecretValue(SecretString);

impl SecretValue {
    /// Checks the size. `name` is only used to say which value is wrong.
    pub fn parse(name: &EnvVarName, value: SecretString) -> AppResult<Self> {
        let len = value.expose_secret().len();
        if len == 0 {
            return Err(AppError::invalid(
                "empty_value",
                format!("the value for {name} is empty"),
            ));
        }
        if len > MAX_VALUE_BYTES {
            return Err(AppError::invalid(
                "value_too_large",
                format!(
                    "the value for {name} is {len} bytes; the limit is {MAX_VALUE_BYTES} bytes"
                ),
            ));
        }
        Ok(Self(value))
    }

    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }

    /// The value with CRLF line ends turned into LF. Browsers send every
    /// line end of a `<textarea>` as CRLF, which breaks PEM and SSH keys.
    pub fn with_lf_line_ends(self) -> Self {
        if !self.expose().contains('\r') {
            return self;
        }
        Self(self.expose().replace("\r\n", "\n").into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(result: AppResult<EnvVarName>) -> &'static str {
        match result {
            Err(AppError::Invalid { code, .. }) => code,
            other => panic!("expected an invalid-input error, got {other:?}"),
        }
    }

    #[test]
    fn names_follow_the_pattern() {
        for ok in [
            "A",
            "_X",
            "HUBSPOT_API_KEY",
            "K8S_TOKEN_2",
            &"A".repeat(128),
        ] {
            assert!(EnvVarName::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "lower",
            "1ABC",
            "A-B",
            "A B",
            "ÄPI",
            "A\n",
            &"A".repeat(129),
        ] {
            assert_eq!(code(EnvVarName::parse(bad)), "invalid_name", "{bad:?}");
        }
    }

    #[test]
    fn an_invalid_name_is_not_echoed() {
        let pasted = "sk-live-pasted-into-the-name-field";
        let message = EnvVarName::parse(pasted).unwrap_err().to_string();
        assert!(!message.contains("sk-live"), "{message}");
    }

    #[test]
    fn dangerous_names_are_blocked() {
        for bad in [
            "PATH",
            "HOME",
            "LD_PRELOAD",
            "DYLD_INSERT_LIBRARIES",
            "NODE_OPTIONS",
            "PYTHONPATH",
            "WIDGETD_MASTER_KEY",
        ] {
            assert_eq!(code(EnvVarName::parse(bad)), "blocked_name", "{bad}");
        }
        assert!(EnvVarName::parse("PATHS_FILE").is_ok());
    }

    #[test]
    fn values_keep_their_bytes_and_respect_limits() {
        let name = EnvVarName::parse("KEY").unwrap();
        let v = SecretValue::parse(&name, SecretString::from("  spaced\nlines \n")).unwrap();
        assert_eq!(v.expose(), "  spaced\nlines \n");
        assert!(SecretValue::parse(&name, SecretString::from("")).is_err());
        assert!(SecretValue::parse(&name, SecretString::from("x".repeat(MAX_VALUE_BYTES))).is_ok());
        let err = SecretValue::parse(&name, SecretString::from("x".repeat(MAX_VALUE_BYTES + 1)));
        assert!(matches!(
            err,
            Err(AppError::Invalid {
                code: "value_too_large",
                ..
            })
        ));
        assert_eq!(format!("{v:?}"), "SecretValue(SecretBox<str>([REDACTED]))");
    }
}
