//! The one place text is checked and shown.
//!
//! Text a person types for the agent to read (a dismissal's note, the
//! free-text answer of a clarification) is not a secret (it goes into the
//! resume prompt), so it is plain, bounded, and refused when it holds one
//! of the session creator's stored values (`Answering::refuse_secrets`).
//! Labels an agent writes are one line of plain text ([`check_line`]).
//! Text shown back is quoted with its invisible characters made visible.

use crate::error::{Error, Result};

/// Most characters of a dismissal's note.
pub const MAX_NOTE_CHARS: usize = 500;

/// What a typed text is called in refusals, with its codes.
pub struct TextRules {
    /// "a note", "the free-text answer".
    pub what: &'static str,
    pub max_chars: usize,
    /// The code of a text over `max_chars`.
    pub too_long: &'static str,
    /// The code of a text with control characters.
    pub invalid: &'static str,
}

/// The rules of a dismissal's note.
pub const NOTE: TextRules = TextRules {
    what: "a note",
    max_chars: MAX_NOTE_CHARS,
    too_long: "note_too_long",
    invalid: "invalid_note",
};

/// One line of plain text, not blank, at most `max` characters: an item's
/// label, a tier's name. `codes` are the refusals' codes for a blank, a
/// too long and a multi-line or control-character text, in that order;
/// `what` names the text in the message ("item 3's label"), which never
/// quotes it.
pub fn check_line(text: &str, max: usize, what: &str, codes: [&'static str; 3]) -> Result<()> {
    let [empty, long, bad] = codes;
    let chars = text.chars().count();
    if text.trim().is_empty() {
        return Err(Error::invalid(empty, format!("{what} is empty")));
    }
    if chars > max {
        return Err(Error::invalid(
            long,
            format!("{what} has {chars} characters; the limit is {max}"),
        ));
    }
    if text.chars().any(char::is_control) {
        return Err(Error::invalid(
            bad,
            format!("{what} is one line of plain text: no control characters"),
        ));
    }
    Ok(())
}

/// Reads a typed text: the CRLF line ends a browser sends from a text area
/// become LF, and the rest is kept as typed. Blank is `None`. Refused: more
/// than `max_chars` characters, or control characters other than newline
/// and tab. A refusal never quotes the text.
pub fn plain_text(raw: &str, rules: &TextRules) -> Result<Option<String>> {
    let text = raw.replace("\r\n", "\n");
    if text.trim().is_empty() {
        return Ok(None);
    }
    let len = text.chars().count();
    if len > rules.max_chars {
        return Err(Error::invalid(
            rules.too_long,
            format!(
                "{} has at most {} characters; this one has {len}",
                rules.what, rules.max_chars
            ),
        ));
    }
    if text
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return Err(Error::invalid(
            rules.invalid,
            format!(
                "{} is plain text: no control characters but line breaks and tabs",
                rules.what
            ),
        ));
    }
    Ok(Some(text))
}

/// `prompt` with the person's note added as its last sentence, JSON-quoted
/// so that it cannot pass for the prompt's own words.
pub fn with_note(prompt: String, note: Option<&str>) -> String {
    match note {
        Some(note) => format!("{prompt} User's note: {}", serde_json::Value::from(note)),
        None => prompt,
    }
}

/// What is approved must read as what runs: invisible and direction-changing
/// characters (bidi overrides and isolates, zero-width ones, other format
/// and control characters but newline and tab) are shown as `⟨U+202E⟩`, so
/// a command cannot look different from its bytes ("Trojan Source").
pub fn visible_controls(text: &str) -> String {
    let hidden = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{00AD}' | '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}' | '\u{2060}'..='\u{206F}' | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}')
    };
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if hidden(c) {
            out.push_str(&format!("⟨U+{:04X}⟩", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// An agent's own text as a refusal names it: at most 60 characters, and
/// no hidden character raw (see [`visible_controls`]).
pub fn quoted(text: &str) -> String {
    let short: String = text.chars().take(60).collect();
    let ellipsis = if text.chars().count() > 60 { "…" } else { "" };
    format!(
        "\"{}{ellipsis}\"",
        visible_controls(&short).replace(['\n', '\t'], " ")
    )
}

/// The agent's text as a client shows it in one line of its own UI:
/// whole, hidden characters made visible, a line break shown as `⏎`, so
/// that it cannot draw a line of its own.
pub fn on_one_line(text: &str) -> String {
    visible_controls(text)
        .replace('\n', " ⏎ ")
        .replace('\t', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(raw: &str) -> &'static str {
        match plain_text(raw, &NOTE) {
            Err(Error::Invalid { code, message }) => {
                assert!(!message.contains(raw), "{message}");
                code
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn notes_are_plain_bounded_and_keep_what_was_typed() {
        assert_eq!(plain_text("  \r\n ", &NOTE).unwrap(), None);
        assert_eq!(
            plain_text(" use the\r\nstaging key ", &NOTE)
                .unwrap()
                .as_deref(),
            Some(" use the\nstaging key ")
        );
        assert!(plain_text(&"é".repeat(500), &NOTE).unwrap().is_some());
        assert_eq!(code(&"x".repeat(501)), "note_too_long");
        assert_eq!(code("a\u{1b}[31mred"), "invalid_note");
        assert_eq!(
            with_note("[Agor] Done.".into(), Some("say \"hi\"\nthen go")),
            r#"[Agor] Done. User's note: "say \"hi\"\nthen go""#
        );
    }
}
