//! Slack's limits on a message's Block Kit payload, and the one check every
//! message widgetd builds passes before it is sent (`blocks::message`).
//! Slack refuses a payload over any of them whole (`invalid_blocks`,
//! `msg_too_long`), and sending it again changes nothing: a message that
//! does not fit is replaced by the link-only one instead.
//!
//! The figures are Slack's, as published in its Block Kit reference on
//! docs.slack.dev (read 2026-12-08): "Section block" (`text` 1 to 3,000
//! characters, `block_id` at most 255), "Header block" (`text` at most
//! 150), "Actions block" (at most 25 elements), "Button element" (`text`
//! at most 75, `value` 2,000, `url` 3,000, `action_id` 255), "Blocks" (at
//! most 50 blocks in a message); and the `chat.update` method (`msg_too_long`:
//! "the `text` field cannot exceed 4,000 characters", which
//! `chat.postMessage` also recommends). Lengths are counted in UTF-16 code
//! units, never fewer than Slack's characters, so a text at a limit by this
//! count is within Slack's.

use std::fmt;

use serde_json::Value;

/// Blocks in one message.
pub const MAX_BLOCKS: usize = 50;
/// A section's text.
pub const MAX_SECTION_TEXT: usize = 3000;
/// A header's text.
pub const MAX_HEADER_TEXT: usize = 150;
/// Elements of one actions block.
pub const MAX_ACTIONS: usize = 25;
/// A button's text.
pub const MAX_BUTTON_TEXT: usize = 75;
/// A button's `value`.
pub const MAX_BUTTON_VALUE: usize = 2000;
/// A button's `url`.
pub const MAX_URL: usize = 3000;
/// A `block_id` or an `action_id`.
pub const MAX_ID: usize = 255;
/// The message's own `text` (its notification).
pub const MAX_MESSAGE_TEXT: usize = 4000;

/// What of a payload breaks a limit: where (a JSON pointer into the
/// `chat.postMessage` body) and why. Names no content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unfit {
    pub at: String,
    pub why: String,
}

impl fmt::Display for Unfit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.at, self.why)
    }
}

/// A text's length as this check counts it.
pub fn length(text: &str) -> usize {
    text.encode_utf16().count()
}

/// `text` cut to at most `max` (at least 1) by [`length`], ending in `…`
/// when cut. Cut plain text, before escaping, so an entity is never split.
pub fn cut(text: &str, max: usize) -> String {
    if length(text) <= max {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        // Room is kept for the `…` (one unit).
        if used + c.len_utf16() > max.saturating_sub(1) {
            break;
        }
        used += c.len_utf16();
        out.push(c);
    }
    out.push('…');
    out
}

/// Checks a message's notification `text` and its `blocks` against every
/// limit; a block or element of a type this check does not know is refused
/// too, so nothing reaches Slack unchecked.
pub fn check(text: &str, blocks: &Value) -> Result<(), Unfit> {
    within("/text", text, 1, MAX_MESSAGE_TEXT)?;
    let blocks = blocks
        .as_array()
        .ok_or_else(|| unfit("/blocks", "not a list"))?;
    at_most("/blocks", blocks.len(), MAX_BLOCKS)?;
    for (i, block) in blocks.iter().enumerate() {
        let at = format!("/blocks/{i}");
        optional(&at, block, "block_id", MAX_ID)?;
        match block["type"].as_str() {
            Some("section") => text_object(&at, block, MAX_SECTION_TEXT)?,
            Some("header") => text_object(&at, block, MAX_HEADER_TEXT)?,
            Some("actions") => actions(&at, block)?,
            _ => return Err(unfit(&at, "a block type this check does not know")),
        }
    }
    Ok(())
}

fn actions(at: &str, block: &Value) -> Result<(), Unfit> {
    let elements = block["elements"]
        .as_array()
        .ok_or_else(|| unfit(at, "no elements"))?;
    at_most(&format!("{at}/elements"), elements.len(), MAX_ACTIONS)?;
    for (i, element) in elements.iter().enumerate() {
        let at = format!("{at}/elements/{i}");
        if element["type"] != "button" {
            return Err(unfit(&at, "an element type this check does not know"));
        }
        optional(&at, element, "action_id", MAX_ID)?;
        optional(&at, element, "value", MAX_BUTTON_VALUE)?;
        optional(&at, element, "url", MAX_URL)?;
        text_object(&at, element, MAX_BUTTON_TEXT)?;
    }
    Ok(())
}

/// `parent.text.text`, 1 to `max` long.
fn text_object(at: &str, parent: &Value, max: usize) -> Result<(), Unfit> {
    let at = format!("{at}/text/text");
    let text = parent["text"]["text"]
        .as_str()
        .ok_or_else(|| unfit(&at, "missing"))?;
    within(&at, text, 1, max)
}

/// `parent[key]`, if present, a text of at most `max`.
fn optional(at: &str, parent: &Value, key: &str, max: usize) -> Result<(), Unfit> {
    match parent.get(key) {
        None => Ok(()),
        Some(Value::String(text)) => within(&format!("{at}/{key}"), text, 0, max),
        Some(_) => Err(unfit(&format!("{at}/{key}"), "not a string")),
    }
}

fn within(at: &str, text: &str, min: usize, max: usize) -> Result<(), Unfit> {
    let n = length(text);
    if n < min {
        return Err(unfit(at, &format!("empty; at least {min}")));
    }
    at_most(at, n, max)
}

fn at_most(at: &str, n: usize, max: usize) -> Result<(), Unfit> {
    if n > max {
        return Err(unfit(at, &format!("{n}, over the limit of {max}")));
    }
    Ok(())
}

fn unfit(at: &str, why: &str) -> Unfit {
    Unfit {
        at: at.to_owned(),
        why: why.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn section(text: &str) -> Value {
        json!({ "type": "section", "text": { "type": "mrkdwn", "text": text } })
    }

    fn button(text: &str, value: &str) -> Value {
        json!({ "type": "actions", "block_id": "widgetd:x", "elements": [
            { "type": "button", "action_id": "option.0", "value": value,
              "text": { "type": "plain_text", "text": text } }] })
    }

    #[test]
    fn each_limit_holds_at_its_figure_and_breaks_one_past_it() {
        let x = |n: usize| "x".repeat(n);
        let ok = |blocks: Value| check("t", &blocks);
        assert_eq!(ok(json!([section(&x(3000))])), Ok(()));
        let over = ok(json!([section(&x(3001))])).unwrap_err();
        assert_eq!(over.at, "/blocks/0/text/text");
        assert!(ok(json!([section("")])).is_err(), "an empty section");
        let header =
            |n| json!([{ "type": "header", "text": { "type": "plain_text", "text": x(n) } }]);
        assert_eq!(ok(header(150)), Ok(()));
        assert!(ok(header(151)).is_err());
        assert_eq!(ok(json!([button(&x(75), &x(2000))])), Ok(()));
        assert!(ok(json!([button(&x(76), "0")])).is_err());
        assert!(ok(json!([button("b", &x(2001))])).is_err());
        let with = |key: &str, n: usize| {
            let mut block = button("b", "0");
            block["elements"][0][key] = json!(x(n));
            json!([block])
        };
        assert_eq!(ok(with("url", 3000)), Ok(()));
        assert!(ok(with("url", 3001)).is_err());
        assert_eq!(ok(with("action_id", 255)), Ok(()));
        assert!(ok(with("action_id", 256)).is_err());
        let mut block = section("s");
        block["block_id"] = json!(x(256));
        assert!(ok(json!([block])).is_err());
        let many = |n: usize| Value::Array(vec![section("s"); n]);
        assert_eq!(ok(many(50)), Ok(()));
        assert!(ok(many(51)).is_err());
        let buttons = |n: usize| {
            let mut block = button("b", "0");
            block["elements"] = Value::Array(vec![block["elements"][0].clone(); n]);
            json!([block])
        };
        assert_eq!(ok(buttons(25)), Ok(()));
        assert!(ok(buttons(26)).is_err());
        assert_eq!(check(&x(4000), &json!([])), Ok(()));
        assert!(check(&x(4001), &json!([])).is_err());
        assert!(check("", &json!([])).is_err());
    }

    #[test]
    fn what_the_check_does_not_know_is_refused() {
        assert!(check("t", &json!([{ "type": "image" }])).is_err());
        let select = json!([{ "type": "actions", "elements": [{ "type": "static_select" }] }]);
        assert!(check("t", &select).is_err());
        assert!(check("t", &json!({ "type": "section" })).is_err());
    }

    #[test]
    fn lengths_count_utf16_units_and_cuts_keep_whole_characters() {
        assert_eq!(length("héllo"), 5);
        assert_eq!(length("🦀"), 2);
        assert_eq!(cut("short", 75), "short");
        let crabs = "🦀".repeat(40);
        let shown = cut(&crabs, 75);
        assert!(length(&shown) <= 75, "{}", length(&shown));
        assert!(shown.ends_with('…'));
        assert_eq!(shown.chars().filter(|c| *c == '🦀').count(), 37);
        assert_eq!(cut(&"&".repeat(10), 5), "&&&&…");
    }
}
