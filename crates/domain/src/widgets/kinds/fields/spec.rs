//! The fields of `ask_fields` as agents send them, and their validation.
//! The types and limits are those of MCP form-mode elicitation's
//! restricted schema (2025-11-25: string with `minLength`/`maxLength` and
//! `format` `email`, `uri` or `date`; `number` and `integer` with
//! `minimum`/`maximum`; `boolean`; each with a `default`), so that a
//! question maps to a form one to one (`src/mcp/elicit.rs`). `pattern` is
//! widgetd's own: checked on the server only.

use regex::{Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};

/// Most fields in one question.
pub const MAX_FIELDS: usize = 10;
/// Most characters of a field's name, label, description.
const MAX_NAME_CHARS: usize = 40;
const MAX_LABEL_CHARS: usize = 80;
const MAX_DESCRIPTION_CHARS: usize = 300;
/// Most characters of a `pattern`.
pub const MAX_PATTERN_CHARS: usize = 200;
/// Most bytes a compiled `pattern` may take (the `regex` crate's limits).
const PATTERN_SIZE_LIMIT: usize = 256 * 1024;
/// Most characters of a one-line answer (text, email, URL) and of a
/// multi-line one; the bound of a field's `max` for those types.
pub const MAX_LINE_CHARS: usize = 1000;
pub const MAX_MULTILINE_CHARS: usize = 4000;
/// The largest magnitude of a number bound or answer: integers beyond it
/// are not exact as JSON numbers in every client.
pub const MAX_MAGNITUDE: f64 = 9_007_199_254_740_991.0;

/// What a field takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FieldType {
    /// One line of text (the default).
    #[default]
    Text,
    /// Several lines of text.
    Multiline,
    /// A number (decimals allowed).
    Number,
    /// A whole number.
    Integer,
    /// Yes or no: a check box, answered `true` or `false`.
    Boolean,
    /// An email address.
    Email,
    /// An `http` or `https` URL.
    Url,
    /// A calendar date, `YYYY-MM-DD`.
    Date,
}

impl FieldType {
    /// A string type, whose `min`/`max` bound its length in characters.
    pub fn is_string(self) -> bool {
        matches!(self, Self::Text | Self::Multiline | Self::Email | Self::Url)
    }

    /// The most characters an answer of this type may have.
    pub fn max_chars(self) -> usize {
        match self {
            Self::Multiline => MAX_MULTILINE_CHARS,
            _ => MAX_LINE_CHARS,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Multiline => "multiline",
            Self::Number => "number",
            Self::Integer => "integer",
            Self::Boolean => "boolean",
            Self::Email => "email",
            Self::Url => "url",
            Self::Date => "date",
        }
    }
}

/// One field of `ask_fields`, as the agent sends it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FieldInput {
    /// The answer's key (1 to 40 characters: lower-case letters, digits,
    /// `_`, starting with a letter), e.g. "staging_url". Unique.
    pub name: String,
    /// What the person sees above the input (1 to 80 characters; the name
    /// when absent).
    #[serde(default)]
    pub label: Option<String>,
    /// `text` (one line, the default), `multiline`, `number`, `integer`,
    /// `boolean`, `email`, `url` (http or https) or `date` (YYYY-MM-DD).
    #[serde(default, rename = "type")]
    pub field_type: FieldType,
    /// A hint shown under the input (at most 300 characters).
    #[serde(default)]
    pub description: Option<String>,
    /// Whether an answer is needed (default true). A boolean always has one.
    #[serde(default)]
    pub required: Option<bool>,
    /// The smallest value (number, integer) or the fewest characters (text,
    /// multiline, email, url).
    #[serde(default)]
    pub min: Option<f64>,
    /// The largest value (number, integer) or the most characters (text:
    /// at most 1000, multiline: at most 4000).
    #[serde(default)]
    pub max: Option<f64>,
    /// A regular expression the whole answer must match (text, multiline,
    /// email, url; at most 200 characters; Rust `regex` syntax, no
    /// look-around or back-references).
    #[serde(default)]
    pub pattern: Option<String>,
    /// The value the input starts with (a string, number or boolean of the
    /// field's type). Never an answer by itself: the person still sends it.
    #[serde(default)]
    pub default: Option<Value>,
}

/// A validated field, as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Field {
    pub name: String,
    pub label: String,
    #[serde(rename = "type")]
    pub field_type: FieldType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
}

/// A `pattern` compiled as the whole answer must match it: linear time,
/// bounded size. `None` when it does not compile within the limits, or
/// when it is not a regular expression on its own: the pattern is parsed
/// before it is anchored, so one such as `a)|(.*` cannot close the anchor's
/// group and match anything.
pub fn compile_pattern(pattern: &str) -> Option<Regex> {
    let build = |text: &str| {
        RegexBuilder::new(text)
            .size_limit(PATTERN_SIZE_LIMIT)
            .dfa_size_limit(PATTERN_SIZE_LIMIT)
            .nest_limit(50)
            .build()
            .ok()
    };
    build(pattern)?;
    build(&format!("^(?:{pattern})$"))
}

fn one_line(text: &str) -> bool {
    !text.chars().any(char::is_control)
}

/// Validates the agent's fields; `n` counts from 1 in messages, which name
/// a field by its place, never by what was sent.
pub fn parse_fields(fields: &[FieldInput]) -> Result<Vec<Field>> {
    if fields.is_empty() || fields.len() > MAX_FIELDS {
        return Err(Error::invalid(
            "fields_count",
            format!(
                "`fields` needs 1 to {MAX_FIELDS} fields; it has {}",
                fields.len()
            ),
        ));
    }
    let mut parsed: Vec<Field> = Vec::with_capacity(fields.len());
    for (i, f) in fields.iter().enumerate() {
        let field = parse_field(i + 1, f)?;
        if let Some(first) = parsed.iter().position(|p| p.name == field.name) {
            return Err(Error::invalid(
                "duplicate_field_name",
                format!("fields {} and {} have the same `name`", first + 1, i + 1),
            ));
        }
        parsed.push(field);
    }
    Ok(parsed)
}

/// The field's name, label and description, checked; `n` names it.
fn parse_words(n: usize, f: &FieldInput) -> Result<(String, Option<String>)> {
    let name_ok = f.name.len() <= MAX_NAME_CHARS
        && f.name.starts_with(|c: char| c.is_ascii_lowercase())
        && f.name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !name_ok {
        return Err(Error::invalid(
            "invalid_field_name",
            format!(
                "field {n}: `name` needs 1 to {MAX_NAME_CHARS} lower-case letters, digits or `_`, \
                 starting with a letter"
            ),
        ));
    }
    let label = match &f.label {
        Some(label) => label.trim().to_owned(),
        None => f.name.clone(),
    };
    if label.is_empty() || label.chars().count() > MAX_LABEL_CHARS || !one_line(&label) {
        return Err(Error::invalid(
            "invalid_label",
            format!("field {n}: `label` needs 1 to {MAX_LABEL_CHARS} characters on one line"),
        ));
    }
    let description = f
        .description
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty());
    if let Some(d) = description
        && (d.chars().count() > MAX_DESCRIPTION_CHARS || !one_line(d))
    {
        return Err(Error::invalid(
            "description_too_long",
            format!(
                "field {n}: `description` has at most {MAX_DESCRIPTION_CHARS} characters, on one line"
            ),
        ));
    }
    Ok((label, description.map(str::to_owned)))
}

fn parse_field(n: usize, f: &FieldInput) -> Result<Field> {
    let (label, description) = parse_words(n, f)?;
    let t = f.field_type;
    check_bounds(n, t, f.min, f.max)?;
    if let Some(pattern) = &f.pattern {
        if !t.is_string() {
            return Err(Error::invalid(
                "invalid_pattern",
                format!("field {n}: `pattern` is for text, multiline, email and url fields"),
            ));
        }
        if pattern.chars().count() > MAX_PATTERN_CHARS || compile_pattern(pattern).is_none() {
            return Err(Error::invalid(
                "invalid_pattern",
                format!(
                    "field {n}: `pattern` must be a regular expression of at most \
                     {MAX_PATTERN_CHARS} characters in Rust `regex` syntax (no look-around, \
                     no back-references) that compiles within the size limit"
                ),
            ));
        }
    }
    let field = Field {
        name: f.name.clone(),
        label,
        field_type: t,
        description,
        required: t != FieldType::Boolean && f.required.unwrap_or(true),
        min: f.min,
        max: f.max,
        pattern: f.pattern.clone(),
        default: None,
    };
    let default = match &f.default {
        None | Some(Value::Null) => None,
        Some(value) => Some(check_default(n, &field, value)?),
    };
    Ok(Field { default, ..field })
}

fn check_bounds(n: usize, t: FieldType, min: Option<f64>, max: Option<f64>) -> Result<()> {
    let refuse = |why: String| {
        Err(Error::invalid(
            "invalid_bounds",
            format!("field {n}: {why}"),
        ))
    };
    if min.is_none() && max.is_none() {
        return Ok(());
    }
    match t {
        FieldType::Boolean | FieldType::Date => {
            return refuse(format!("`min` and `max` are not for {} fields", t.as_str()));
        }
        _ if t.is_string() => {
            for bound in [min, max].into_iter().flatten() {
                if bound.fract() != 0.0 || bound < 0.0 || bound > t.max_chars() as f64 {
                    return refuse(format!(
                        "`min` and `max` of a {} field are whole numbers of characters, 0 to {}",
                        t.as_str(),
                        t.max_chars()
                    ));
                }
            }
        }
        _ => {
            for bound in [min, max].into_iter().flatten() {
                if !bound.is_finite() || bound.abs() > MAX_MAGNITUDE {
                    return refuse(format!(
                        "`min` and `max` are numbers of magnitude at most {MAX_MAGNITUDE}"
                    ));
                }
                if t == FieldType::Integer && bound.fract() != 0.0 {
                    return refuse("`min` and `max` of an integer field are whole numbers".into());
                }
            }
        }
    }
    if let (Some(min), Some(max)) = (min, max)
        && min > max
    {
        return refuse("`min` is greater than `max`".into());
    }
    Ok(())
}

/// The default as stored: of the field's type and passing its checks.
fn check_default(n: usize, field: &Field, value: &Value) -> Result<Value> {
    let refuse = || {
        Error::invalid(
            "invalid_default",
            format!(
                "field {n}: `default` must be a valid answer of a {} field",
                field.field_type.as_str()
            ),
        )
    };
    let raw = match (field.field_type, value) {
        (FieldType::Boolean, Value::Bool(b)) => return Ok(Value::Bool(*b)),
        (FieldType::Number | FieldType::Integer, Value::Number(num)) => num.to_string(),
        (t, Value::String(s)) if t != FieldType::Boolean => s.clone(),
        _ => return Err(refuse()),
    };
    match super::check::value(field, &raw) {
        Ok(Some(value)) => Ok(value),
        _ => Err(refuse()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field(v: Value) -> FieldInput {
        serde_json::from_value(v).unwrap()
    }

    fn code(fields: Vec<Value>) -> &'static str {
        let fields: Vec<FieldInput> = fields.into_iter().map(field).collect();
        match parse_fields(&fields) {
            Err(Error::Invalid { code, message }) => {
                assert!(!message.contains("CANARY"), "{message}");
                code
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn fields_are_checked_with_stable_codes() {
        let ok = parse_fields(&[field(json!({ "name": "url", "type": "url" }))]).unwrap();
        assert_eq!((ok[0].label.as_str(), ok[0].required), ("url", true));
        assert_eq!(code(vec![]), "fields_count");
        assert_eq!(
            code(vec![json!({ "name": "Bad CANARY" })]),
            "invalid_field_name"
        );
        assert_eq!(
            code(vec![json!({ "name": "a" }), json!({ "name": "a" })]),
            "duplicate_field_name"
        );
        assert_eq!(
            code(vec![json!({ "name": "a", "label": " " })]),
            "invalid_label"
        );
        assert_eq!(
            code(vec![json!({ "name": "a", "type": "boolean", "min": 1 })]),
            "invalid_bounds"
        );
        assert_eq!(
            code(vec![json!({ "name": "a", "min": 5, "max": 2 })]),
            "invalid_bounds"
        );
        assert_eq!(
            code(vec![json!({ "name": "a", "max": 1001 })]),
            "invalid_bounds"
        );
        assert_eq!(
            code(vec![json!({ "name": "a", "type": "integer", "min": 0.5 })]),
            "invalid_bounds"
        );
        assert_eq!(
            code(vec![json!({ "name": "a", "pattern": "(CANARY" })]),
            "invalid_pattern"
        );
        assert_eq!(
            code(vec![json!({ "name": "a", "pattern": "(a)\\1" })]),
            "invalid_pattern"
        );
        assert_eq!(
            code(vec![json!({ "name": "a", "pattern": "x".repeat(201) })]),
            "invalid_pattern"
        );
        // A pattern whose compiled form is too large.
        assert_eq!(
            code(vec![
                json!({ "name": "a", "pattern": "\\w{1000}\\w{1000}" })
            ]),
            "invalid_pattern"
        );
        assert_eq!(
            code(vec![
                json!({ "name": "a", "type": "number", "pattern": "1" })
            ]),
            "invalid_pattern"
        );
        assert_eq!(
            code(vec![
                json!({ "name": "a", "type": "integer", "default": "CANARY" })
            ]),
            "invalid_default"
        );
        assert_eq!(
            code(vec![
                json!({ "name": "a", "type": "integer", "max": 3, "default": 4 })
            ]),
            "invalid_default"
        );
        assert_eq!(
            code(vec![
                json!({ "name": "a", "type": "boolean", "default": "yes" })
            ]),
            "invalid_default"
        );
        let typed = parse_fields(&[
            field(json!({ "name": "n", "type": "integer", "default": 8080 })),
            field(json!({ "name": "b", "type": "boolean", "default": true, "required": true })),
            field(json!({ "name": "d", "type": "date", "default": "2026-11-26" })),
        ])
        .unwrap();
        assert_eq!(typed[0].default, Some(json!(8080)));
        assert_eq!(typed[1].default, Some(json!(true)));
        assert!(!typed[1].required, "a boolean always has an answer");
        assert_eq!(typed[2].default, Some(json!("2026-11-26")));
    }
}
