//! Env var names and values as they enter the system: parsed once at the
//! edge, valid from then on.

use std::fmt;

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

const MAX_NAME_LEN: usize = 128;
/// Largest value accepted, in bytes.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;

/// Names a process must not have overridden. How the list is chosen: a
/// name is blocked when setting it changes *what code runs* or *where its
/// traffic and trust go*, not just what a program reads as data —
/// - identity and lookup of the process: `PATH HOME SHELL USER LOGNAME PWD
///   TERM IFS`;
/// - shell start-up and evaluation hooks: `BASH_ENV ENV PROMPT_COMMAND
///   PS4`, exported functions `BASH_FUNC_*`;
/// - interpreter and runtime option or code injection: `NODE_OPTIONS
///   NODE_PATH PERL5OPT PERL5LIB RUBYOPT RUBYLIB JAVA_TOOL_OPTIONS
///   _JAVA_OPTIONS JDK_JAVA_OPTIONS`, `PYTHON*`, the loaders' `LD_*` and
///   `DYLD_*`, `GCONV_PATH`;
/// - commands other tools run for us: `GIT_SSH GIT_SSH_COMMAND
///   GIT_EXEC_PATH EDITOR VISUAL PAGER`, `GIT_CONFIG_*`;
/// - where traffic goes and whom it trusts: `*_PROXY` (any case of
///   `http_proxy` is upper-case here), `NODE_EXTRA_CA_CERTS SSL_CERT_FILE
///   SSL_CERT_DIR CURL_CA_BUNDLE REQUESTS_CA_BUNDLE`;
/// - widgetd's own `WIDGETD_*`.
const BLOCKED_NAMES: [&str; 33] = [
    "PATH",
    "HOME",
    "SHELL",
    "USER",
    "LOGNAME",
    "PWD",
    "TERM",
    "IFS",
    "BASH_ENV",
    "ENV",
    "PROMPT_COMMAND",
    "PS4",
    "NODE_OPTIONS",
    "NODE_PATH",
    "PERL5OPT",
    "PERL5LIB",
    "RUBYOPT",
    "RUBYLIB",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "GCONV_PATH",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EXEC_PATH",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "CURL_CA_BUNDLE",
    "REQUESTS_CA_BUNDLE",
];
const BLOCKED_PREFIXES: [&str; 6] = [
    "LD_",
    "DYLD_",
    "PYTHON",
    "WIDGETD_",
    "BASH_FUNC_",
    "GIT_CONFIG",
];
const BLOCKED_SUFFIXES: [&str; 1] = ["_PROXY"];

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
    type Error = Error;
    fn try_from(name: String) -> Result<Self> {
        Self::parse(&name)
    }
}

impl EnvVarName {
    pub fn parse(name: &str) -> Result<Self> {
        let well_formed = !name.is_empty()
            && name.len() <= MAX_NAME_LEN
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
        if !well_formed {
            return Err(Error::invalid(
                "invalid_name",
                // The name itself is not repeated: a person may have pasted
                // a value into the name field.
                format!(
                    "a name of {} characters is not a valid env var name: use 1–{MAX_NAME_LEN} characters of A–Z, 0–9 and _, not starting with a digit",
                    name.chars().count()
                ),
            ));
        }
        if BLOCKED_NAMES.contains(&name)
            || BLOCKED_PREFIXES.iter().any(|p| name.starts_with(p))
            || BLOCKED_SUFFIXES.iter().any(|p| name.ends_with(p))
        {
            return Err(Error::invalid(
                "blocked_name",
                format!(
                    "`{name}` cannot be set through widgetd: it would change what processes run \
                     or where their traffic goes (blocked: {}, names starting with {}, and \
                     names ending in {})",
                    BLOCKED_NAMES.join(", "),
                    BLOCKED_PREFIXES.join(", "),
                    BLOCKED_SUFFIXES.join(", ")
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
    pub fn parse(name: &EnvVarName, value: SecretString) -> Result<Self> {
        let len = value.expose_secret().len();
        if len == 0 {
            return Err(Error::invalid(
                "empty_value",
                format!("the value for {name} is empty"),
            ));
        }
        // A NUL cannot be in a process environment: `exec` would fail for
        // every command of the session.
        if value.expose_secret().contains('\0') {
            return Err(Error::invalid(
                "invalid_value",
                format!(
                    "the value for {name} contains a NUL byte, which an environment cannot hold"
                ),
            ));
        }
        if len > MAX_VALUE_BYTES {
            return Err(Error::invalid(
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

    fn code(result: Result<EnvVarName>) -> &'static str {
        match result {
            Err(Error::Invalid { code, .. }) => code,
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
    fn a_name_reads_back_as_itself() {
        let name = EnvVarName::parse("API_KEY").unwrap();
        assert_eq!(name.to_string(), "API_KEY");
        assert_eq!(serde_json::to_string(&name).unwrap(), r#""API_KEY""#);
        assert_eq!(String::from(name), "API_KEY");
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
            "BASH_ENV",
            "ENV",
            "PERL5OPT",
            "RUBYOPT",
            "JAVA_TOOL_OPTIONS",
            "NODE_EXTRA_CA_CERTS",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "NO_PROXY",
            "GIT_SSH_COMMAND",
            "BASH_FUNC_X",
            "GIT_CONFIG_COUNT",
            "PS4",
        ] {
            assert_eq!(code(EnvVarName::parse(bad)), "blocked_name", "{bad}");
        }
        for fine in [
            "PATHS_FILE",
            "ENVIRONMENT",
            "PROXY_URL",
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
        ] {
            assert!(EnvVarName::parse(fine).is_ok(), "{fine}");
        }
    }

    #[test]
    fn values_keep_their_bytes_and_respect_limits() {
        let name = EnvVarName::parse("KEY").unwrap();
        let v = SecretValue::parse(&name, SecretString::from("  spaced\nlines \n")).unwrap();
        assert_eq!(v.expose(), "  spaced\nlines \n");
        assert!(SecretValue::parse(&name, SecretString::from("")).is_err());
        assert_eq!(MAX_VALUE_BYTES, 65_536, "64 KiB, as documented");
        assert!(SecretValue::parse(&name, SecretString::from("x".repeat(MAX_VALUE_BYTES))).is_ok());
        let err = SecretValue::parse(&name, SecretString::from("x".repeat(MAX_VALUE_BYTES + 1)));
        assert!(matches!(
            err,
            Err(Error::Invalid {
                code: "value_too_large",
                ..
            })
        ));
        assert_eq!(format!("{v:?}"), "SecretValue(SecretBox<str>([REDACTED]))");
        let nul = SecretValue::parse(&name, SecretString::from("a\0b"));
        assert!(matches!(
            nul,
            Err(Error::Invalid {
                code: "invalid_value",
                ..
            })
        ));
    }

    use proptest::prelude::*;

    /// Mostly name-shaped strings, with lower case, punctuation, control
    /// and non-ASCII characters mixed in, up to a little past the limit.
    fn name_like() -> impl Strategy<Value = String> {
        prop_oneof![
            "[A-Z_][A-Z0-9_]{0,140}",
            "[A-Za-z0-9_ $=/\\-]{0,20}",
            "[A-Z_]{0,6}[\\x00\n\u{202e}ÄÀ€a-z][A-Z0-9_]{0,6}",
            ".{0,20}",
        ]
    }

    fn matches_pattern(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= MAX_NAME_LEN
            && name.starts_with(|c: char| c.is_ascii_uppercase() || c == '_')
            && name
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]
        #[test]
        fn any_name_is_accepted_exactly_when_it_matches_and_is_not_blocked(name in name_like()) {
            let result = EnvVarName::parse(&name);
            if !matches_pattern(&name) {
                let message = result.as_ref().unwrap_err().to_string();
                prop_assert_eq!(code(result), "invalid_name", "{:?}", name);
                // A malformed name may be a pasted secret: never repeat it.
                if name.chars().count() >= 4 {
                    prop_assert!(!message.contains(name.as_str()), "{:?} echoed", name);
                }
            } else if let Ok(parsed) = result {
                prop_assert_eq!(parsed.as_str(), name);
            } else {
                prop_assert_eq!(code(result), "blocked_name", "{:?}", name);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(5_000))]
        #[test]
        fn any_value_keeps_its_bytes_except_crlf_which_becomes_lf(raw in "[a\r\n é\x00]{0,64}") {
            let name = EnvVarName::parse("KEY").unwrap();
            match SecretValue::parse(&name, SecretString::from(raw.clone())) {
                Ok(v) => {
                    prop_assert_eq!(v.expose(), raw.as_str());
                    let lf = v.with_lf_line_ends();
                    prop_assert_eq!(lf.expose(), raw.replace("\r\n", "\n"));
                    prop_assert!(!lf.expose().is_empty());
                }
                Err(e) => {
                    // Only empty values and values holding NUL (which an
                    // environment cannot carry) are refused.
                    prop_assert!(raw.is_empty() || raw.contains('\0'), "{:?} refused: {}", raw, e);
                    prop_assert!(raw.len() < 8 || !e.to_string().contains(&raw), "value echoed");
                }
            }
        }
    }
}
