//! The checks every list of agent-written items shares (`mapping`'s sides,
//! `tree`'s nodes): an id that answers name, a label the person reads, an
//! optional group. Each refusal names the item by list and position, never
//! what was sent.

use crate::error::{Error, Result};

/// Most characters of an item's id.
pub const MAX_ID_CHARS: usize = 100;
/// Most characters of an item's label.
pub const MAX_LABEL_CHARS: usize = 200;
/// Most characters of an item's group.
pub const MAX_GROUP_CHARS: usize = 80;

/// Where an item is: `widget.left` and its 1-based position.
#[derive(Clone, Copy)]
pub struct At<'a> {
    pub list: &'a str,
    pub n: usize,
}

impl std::fmt::Display for At<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "item {} of `{}`", self.n, self.list)
    }
}

/// One line of plain text of 1 to `max` characters, not blank.
fn one_line(
    at: At<'_>,
    what: &str,
    text: &str,
    max: usize,
    codes: [&'static str; 3],
) -> Result<()> {
    let [empty, too_long, invalid] = codes;
    if text.trim().is_empty() {
        return Err(Error::invalid(empty, format!("{at} has an empty {what}")));
    }
    let chars = text.chars().count();
    if chars > max {
        return Err(Error::invalid(
            too_long,
            format!("the {what} of {at} has {chars} characters; the limit is {max}"),
        ));
    }
    if text.chars().any(char::is_control) {
        return Err(Error::invalid(
            invalid,
            format!("the {what} of {at} is one line of plain text: no control characters"),
        ));
    }
    Ok(())
}

/// An id: 1 to 100 characters, one line, compared exactly.
pub fn check_id(at: At<'_>, id: &str) -> Result<()> {
    one_line(
        at,
        "id",
        id,
        MAX_ID_CHARS,
        ["empty_id", "id_too_long", "invalid_id"],
    )
}

/// A label: 1 to 200 characters, one line.
pub fn check_label(at: At<'_>, label: &str) -> Result<()> {
    one_line(
        at,
        "label",
        label,
        MAX_LABEL_CHARS,
        ["empty_label", "label_too_long", "invalid_label"],
    )
}

/// A group, if given: 1 to 80 characters, one line.
pub fn check_group(at: At<'_>, group: Option<&str>) -> Result<()> {
    match group {
        Some(group) => one_line(
            at,
            "group",
            group,
            MAX_GROUP_CHARS,
            ["empty_group", "group_too_long", "invalid_group"],
        ),
        None => Ok(()),
    }
}

/// `422 duplicate_id` if two of `ids` are equal, naming both positions.
pub fn check_unique<'a>(list: &str, ids: impl IntoIterator<Item = &'a str>) -> Result<()> {
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, id) in ids.into_iter().enumerate() {
        if let Some(first) = seen.insert(id, i + 1) {
            return Err(Error::invalid(
                "duplicate_id",
                format!("item {} of `{list}` has the same id as item {first}", i + 1),
            ));
        }
    }
    Ok(())
}

/// `422 {code}` unless `count` is within `min..=max`.
pub fn check_count(
    code: &'static str,
    list: &str,
    count: usize,
    min: usize,
    max: usize,
) -> Result<()> {
    if (min..=max).contains(&count) {
        return Ok(());
    }
    Err(Error::invalid(
        code,
        format!("`{list}` needs {min} to {max} items; it has {count}"),
    ))
}

/// Most metadata keys of an item.
pub const MAX_METADATA_KEYS: usize = 20;
/// Most characters of a metadata key.
pub const MAX_METADATA_KEY_CHARS: usize = 40;
/// Most characters of a metadata string value.
pub const MAX_METADATA_VALUE_CHARS: usize = 200;

/// An item's metadata: at most 20 keys of 1 to 40 characters, each value a
/// string (at most 200 characters, one line), a number or a boolean.
/// Every refusal is `invalid_metadata`.
pub fn check_metadata(
    at: At<'_>,
    metadata: &std::collections::BTreeMap<String, serde_json::Value>,
) -> Result<()> {
    use serde_json::Value;
    let refuse = |why: String| Err(Error::invalid("invalid_metadata", why));
    if metadata.len() > MAX_METADATA_KEYS {
        return refuse(format!(
            "{at} has more than {MAX_METADATA_KEYS} metadata keys"
        ));
    }
    for (key, value) in metadata {
        let chars = key.chars().count();
        if key.trim().is_empty()
            || chars > MAX_METADATA_KEY_CHARS
            || key.chars().any(char::is_control)
        {
            return refuse(format!(
                "a metadata key of {at} is 1 to {MAX_METADATA_KEY_CHARS} characters of one line"
            ));
        }
        match value {
            Value::String(text)
                if text.chars().count() > MAX_METADATA_VALUE_CHARS
                    || text.chars().any(char::is_control) =>
            {
                return refuse(format!(
                    "a metadata value of {at} is at most {MAX_METADATA_VALUE_CHARS} characters of one line"
                ));
            }
            Value::String(_) | Value::Number(_) | Value::Bool(_) => {}
            _ => {
                return refuse(format!(
                    "a metadata value of {at} is a string, a number or a boolean"
                ));
            }
        }
    }
    Ok(())
}

/// Metadata as shown: `key: value`, joined by `·`.
pub fn shown_metadata(metadata: &std::collections::BTreeMap<String, serde_json::Value>) -> String {
    metadata
        .iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => format!("{k}: {s}"),
            other => format!("{k}: {other}"),
        })
        .collect::<Vec<_>>()
        .join(" · ")
}
