//! Edit before approving: where the agent's request says `allow_edit`,
//! the person may change the tool's input before allowing it. The edit is
//! JSON under the same limits as the agent's input (at most 16 KiB as
//! compact JSON, and of the same JSON type: an object stays an object);
//! an edit equal to the input is no edit. The agent receives the edited
//! input (`edited_input` in the result, the prompt, and a Claude Code
//! hook's `updatedInput`); the card and the audit keep both versions.

use serde_json::Value;

use super::{ApprovalParams, MAX_INPUT_BYTES};
use crate::error::{Error, Result};
use crate::widgets::engine::text::visible_controls;

fn same_type(a: &Value, b: &Value) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

/// The edit box's starting text: the input as indented JSON, with every
/// hidden character shown as `⟨U+…⟩` as the card shows it.
pub fn shown(params: &ApprovalParams) -> String {
    visible_controls(&serde_json::to_string_pretty(&params.input).unwrap_or_default())
}

/// The edited input, if the person changed it; `raw` is the form's text.
/// The box sent back as it started (line endings and the space around it
/// aside) is no edit, even where its `⟨U+…⟩` markers read as other text
/// than the input's hidden characters.
pub fn read(params: &ApprovalParams, raw: Option<&str>) -> Result<Option<Value>> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    let same_text =
        |a: &str, b: &str| a.replace("\r\n", "\n").trim() == b.replace("\r\n", "\n").trim();
    if same_text(raw, &shown(params)) {
        return Ok(None);
    }
    let edited: Value = serde_json::from_str(raw).map_err(|e| {
        Error::invalid(
            "invalid_edited_input",
            format!(
                "the edited input is not JSON (line {}, column {})",
                e.line(),
                e.column()
            ),
        )
    })?;
    if edited == params.input {
        return Ok(None);
    }
    if !params.allow_edit {
        return Err(Error::invalid(
            "edit_not_allowed",
            "the agent did not allow editing this request's input",
        ));
    }
    let size = edited.to_string().len();
    if size > MAX_INPUT_BYTES {
        return Err(Error::invalid(
            "input_too_large",
            format!("the edited input is {size} bytes as JSON; the limit is {MAX_INPUT_BYTES}"),
        ));
    }
    if !same_type(&edited, &params.input) {
        return Err(Error::invalid(
            "invalid_edited_input",
            "the edited input must be JSON of the same type as the original (an object stays an object)",
        ));
    }
    Ok(Some(edited))
}

/// The strings of an edited input: what the person typed, checked against
/// the creator's stored values like any typed answer.
pub fn strings(value: &Value) -> Vec<&str> {
    let mut out = Vec::new();
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => out.push(s.as_str()),
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => {
                out.extend(map.keys().map(String::as_str));
                stack.extend(map.values());
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(allow_edit: bool) -> ApprovalParams {
        ApprovalParams {
            tool: "Bash".into(),
            input: json!({ "command": "rm -rf build" }),
            reason: None,
            allow_edit,
            approvers: None,
        }
    }

    fn code(r: Result<Option<Value>>) -> &'static str {
        match r {
            Err(Error::Invalid { code, message }) => {
                assert!(!message.contains("CANARY"), "{message}");
                code
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn edits_are_json_of_the_same_limits_and_only_where_allowed() {
        let edited = r#"{"command": "rm -rf build/tmp"}"#;
        assert_eq!(
            read(&params(true), Some(edited)).unwrap(),
            Some(json!({ "command": "rm -rf build/tmp" }))
        );
        assert_eq!(
            read(&params(false), Some(r#"{"command":"rm -rf build"}"#)).unwrap(),
            None
        );
        assert_eq!(code(read(&params(false), Some(edited))), "edit_not_allowed");
        assert_eq!(
            code(read(&params(true), Some("{CANARY"))),
            "invalid_edited_input"
        );
        assert_eq!(
            code(read(&params(true), Some("[\"CANARY\"]"))),
            "invalid_edited_input"
        );
        let big = json!({ "command": "x".repeat(17_000) }).to_string();
        assert_eq!(code(read(&params(true), Some(&big))), "input_too_large");
        let value = json!({ "a": ["b", { "c": "d" }], "e": 1 });
        let mut s = strings(&value);
        s.sort_unstable();
        assert_eq!(s, ["a", "b", "c", "d", "e"]);
    }

    #[test]
    fn an_untouched_box_is_no_edit_even_with_hidden_characters_marked() {
        let hidden = ApprovalParams {
            input: json!({ "command": "ls\u{200b} -la" }),
            ..params(true)
        };
        let started = shown(&hidden);
        assert!(started.contains("⟨U+200B⟩"), "{started}");
        assert_eq!(read(&hidden, Some(&started)).unwrap(), None);
        // As a browser sends a textarea back: CRLF line endings.
        let crlf = started.replace('\n', "\r\n");
        assert_eq!(read(&hidden, Some(&crlf)).unwrap(), None);
        // A real change still is one.
        let changed = started.replace("-la", "-l");
        assert!(read(&hidden, Some(&changed)).unwrap().is_some());
    }
}
