//! Command patterns for "Always allow commands like …": which commands
//! are plain enough for a pattern to see what the shell runs, how a
//! pattern matches, what the card offers, and how a pattern rule holds to
//! the call's other identifying fields.

use serde_json::{Map, Value, json};

use super::ApprovalParams;
use crate::error::{Error, Result};

const MAX_PATTERN_CHARS: usize = 200;

/// Whether a command is made of plain words only: no shell metacharacters,
/// quotes, escapes or line breaks, so that what a pattern sees is what the
/// shell runs.
pub fn is_plain_command(command: &str) -> bool {
    !command.is_empty()
        && command
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || " -_./=:,@%+".contains(c))
}

/// Whether `command` matches `pattern`. A pattern without `*` is the
/// command itself, nothing more. `*` stands for any run of characters
/// without a `/` and without `..` (so `cat docs/*` never reaches outside
/// `docs/`), and a pattern ending in ` *` also covers the command with no
/// further arguments (`git status *` covers `git status`). Only plain
/// commands ever match.
pub fn pattern_matches(pattern: &str, command: &str) -> bool {
    if !is_plain_command(command) {
        return false;
    }
    glob(pattern.as_bytes(), command.as_bytes())
        || pattern
            .strip_suffix(" *")
            .is_some_and(|head| glob(head.as_bytes(), command.as_bytes()))
}

/// `pattern` against `text`, one pattern byte at a time over every text
/// prefix (linear in each, whatever the number of `*`).
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    // `matched[j]`: the pattern so far matches `text[..j]`.
    let mut matched = vec![false; text.len() + 1];
    matched[0] = true;
    for &p in pattern {
        let mut next = vec![false; text.len() + 1];
        if p == b'*' {
            // The latest start of a run `*` may take that ends at `j`: a
            // shorter run is allowed whenever a longer one is.
            let mut start: Option<usize> = None;
            for j in 0..=text.len() {
                if matched[j] {
                    start = Some(j);
                } else if let Some(k) = start {
                    let c = text[j - 1];
                    if c == b'/' || (c == b'.' && j >= k + 2 && text[j - 2] == b'.') {
                        start = None;
                    }
                }
                next[j] = start.is_some();
            }
        } else {
            for j in 1..=text.len() {
                next[j] = matched[j - 1] && text[j - 1] == p;
            }
        }
        matched = next;
    }
    matched[text.len()]
}

impl ApprovalParams {
    /// The shell command this request runs, if it is one.
    pub fn command(&self) -> Option<String> {
        self.command_field().map(|(_, c)| c.to_owned())
    }

    /// The field holding the shell command (`command`, else `cmd`) and
    /// the command.
    fn command_field(&self) -> Option<(&'static str, &str)> {
        ["command", "cmd"]
            .into_iter()
            .find_map(|k| Some((k, self.input.get(k)?.as_str()?)))
    }

    /// A pattern rule as stored: the call's identifying fields with the
    /// pattern in place of the command, so that every other field must
    /// still equal what was approved.
    pub(crate) fn pattern_rule(&self, pattern: &str) -> String {
        let mut rule = self.identity();
        if let (Some((key, _)), Value::Object(map)) = (self.command_field(), &mut rule) {
            map.insert(key.to_owned(), json!(pattern));
        }
        rule.to_string()
    }

    /// The pattern of a stored pattern rule, if the rule covers this call:
    /// the command matches it and every other identifying field is equal.
    pub(super) fn covered_by(&self, stored: &str) -> Option<String> {
        let (key, command) = self.command_field()?;
        let Value::Object(mine) = self.identity() else {
            return None;
        };
        let rule = stored_pattern_rule(stored, key);
        let pattern = rule.get(key)?.as_str()?;
        let rest_equal = rule.len() == mine.len()
            && rule.iter().all(|(k, v)| k == key || mine.get(k) == Some(v));
        (rest_equal && pattern_matches(pattern, command)).then(|| pattern.to_owned())
    }

    /// Checks a pattern the person offered for "Always allow commands
    /// like …": plain words and `*`, starting with a literal word, and
    /// covering this very request.
    pub fn check_pattern(&self, pattern: &str) -> Result<()> {
        let refuse = |why: &str| {
            Err(Error::invalid(
                "invalid_pattern",
                format!("the pattern {why}"),
            ))
        };
        let Some(command) = self.command() else {
            return refuse(
                "applies to shell commands only; answer Always to allow this exact input",
            );
        };
        if pattern.chars().count() > MAX_PATTERN_CHARS {
            return refuse(&format!("has at most {MAX_PATTERN_CHARS} characters"));
        }
        let literal = pattern.split('*').next().unwrap_or_default();
        if !literal
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
            || !is_plain_command(&pattern.replace('*', "x"))
        {
            return refuse("starts with a program name and has only plain words and `*`");
        }
        if !is_plain_command(&command) {
            return refuse("cannot cover a command with shell metacharacters, quotes or escapes");
        }
        if !pattern_matches(pattern, &command) {
            return refuse("must cover the command being approved");
        }
        Ok(())
    }

    /// What the pattern field offers first: the program and its first
    /// word, then `*` (`git status *`); where that would not pass
    /// [`Self::check_pattern`] (`ls /tmp`: `*` never spans a `/`), the
    /// command itself; nothing where neither would.
    pub fn suggested_pattern(&self) -> Option<String> {
        let command = self.command().filter(|c| is_plain_command(c))?;
        let words: Vec<&str> = command
            .split(' ')
            .filter(|w| !w.is_empty())
            .take(2)
            .collect();
        [format!("{} *", words.join(" ")), command]
            .into_iter()
            .find(|p| self.check_pattern(p).is_ok())
    }
}

/// A stored pattern rule's fields. Rules kept before identity fields were
/// stored as the bare pattern: read as holding no field but the command,
/// which matches no more than such a rule ever showed.
pub(super) fn stored_pattern_rule(stored: &str, key: &str) -> Map<String, Value> {
    match serde_json::from_str(stored) {
        Ok(Value::Object(map)) => map,
        _ => Map::from_iter([(key.to_owned(), json!(stored))]),
    }
}
