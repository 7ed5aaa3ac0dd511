//! Reading what a caller sent (a REST body, an MCP tool's arguments, a
//! query string) into our types, with refusals that say what is wrong and
//! where without quoting any of it: a value sent may be a secret. The
//! domain's kinds parse their own bodies with these; the HTTP layer's
//! extractor (`api::ApiJson`) uses them too.

use serde::de::DeserializeOwned;
use serde_json::error::Category;

use crate::error::{Error, Result};

fn bad_request(code: &'static str, message: impl Into<String>) -> Error {
    Error::BadRequest {
        code,
        message: message.into(),
    }
}

/// Deserializes JSON, turning errors into messages that quote no input.
/// Anything after the JSON value but white space is refused.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(invalid_body)?;
    de.end().map_err(|err| {
        bad_request(
            "invalid_body",
            format!(
                "the body has more after its JSON value (line {}, column {})",
                err.line(),
                err.column()
            ),
        )
    })?;
    Ok(value)
}

/// Deserializes an already parsed JSON value (an MCP tool's arguments) with
/// the same care and the same errors as a REST body.
pub fn parse_value<T: DeserializeOwned>(value: serde_json::Value) -> Result<T> {
    serde_path_to_error::deserialize(value).map_err(invalid_body)
}

/// [`parse_value`] for a part of a body found at `at` (`widget`): a refusal
/// names its place in the whole body (`widget.options.0.label`).
pub fn parse_value_at<T: DeserializeOwned>(value: serde_json::Value, at: &str) -> Result<T> {
    serde_path_to_error::deserialize(value).map_err(|err| invalid_body_at(err, at))
}

/// `400 invalid_body` naming where and what is wrong, quoting nothing sent.
fn invalid_body(err: serde_path_to_error::Error<serde_json::Error>) -> Error {
    invalid_body_at(err, "")
}

/// [`invalid_body`] for an error inside the part of the body at `at`.
fn invalid_body_at(err: serde_path_to_error::Error<serde_json::Error>, at: &str) -> Error {
    let mut segments: Vec<String> = (!at.is_empty())
        .then(|| at.to_owned())
        .into_iter()
        .chain(err.path().iter().map(segment_text))
        .collect();
    let inner = err.into_inner();
    // The path of an unknown field ends in the unknown key itself, which
    // may be anything the caller typed: name its parent instead.
    if inner.to_string().starts_with("unknown field") {
        segments.pop();
    }
    let path = if segments.is_empty() {
        ".".to_owned()
    } else {
        segments.join(".")
    };
    let message = match inner.classify() {
        Category::Syntax | Category::Eof | Category::Io => format!(
            "the body is not valid JSON (line {}, column {})",
            inner.line(),
            inner.column()
        ),
        Category::Data => format!("{} (at `{path}`)", describe_data_error(&inner.to_string())),
    };
    bad_request("invalid_body", message)
}

fn segment_text(segment: &serde_path_to_error::Segment) -> String {
    use serde_path_to_error::Segment;
    match segment {
        Segment::Seq { index } => index.to_string(),
        // A map key may be anything the caller typed (a value pasted as a
        // key, 70 KB of it): only what looks like one of our field names
        // is shown.
        Segment::Map { key } if is_field_name(key) => key.clone(),
        Segment::Map { .. } => "…".to_owned(),
        Segment::Enum { variant } => variant.clone(),
        Segment::Unknown => "?".to_owned(),
    }
}

/// snake_case of at most 32 characters, as our fields are named.
fn is_field_name(key: &str) -> bool {
    key.len() <= 32
        && key.starts_with(|c: char| c.is_ascii_lowercase())
        && key
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Deserializes a query string (`None` = no query) with the same care.
pub fn parse_query<T: DeserializeOwned>(query: Option<&str>) -> Result<T> {
    serde_urlencoded::from_str(query.unwrap_or_default())
        .map_err(|err| bad_request("invalid_query", describe_data_error(&err.to_string())))
}

/// serde's data errors name fields (safe) but also quote values (not safe):
/// keep the field names and the "expected …" part only.
fn describe_data_error(text: &str) -> String {
    let text = text.split(" at line ").next().unwrap_or_default();
    // "missing field `x`" and "duplicate field `x`" name our own fields.
    if ["missing field", "duplicate field"]
        .iter()
        .any(|p| text.starts_with(p))
    {
        return text.to_owned();
    }
    // "unknown field `<whatever was sent>`, expected …": a key may be
    // anything the caller typed, so only the allowed ones are named.
    if text.starts_with("unknown field") {
        return match text.find(", expected ") {
            Some(at) => format!(
                "unknown field; allowed: {}",
                &text[at + ", expected ".len()..]
            ),
            None => "unknown field".to_owned(),
        };
    }
    // Any quoted input stands before the last ", expected"; what follows it
    // describes our own types.
    match text.rfind(", expected ") {
        Some(at) => format!("wrong type or value: {}", &text[at + 2..]),
        None => "wrong type or value".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Body {
        value: String,
        flag: Option<bool>,
    }

    fn message(json: &str) -> String {
        match parse_json::<Body>(json.as_bytes()) {
            Err(Error::BadRequest { message, .. }) => message,
            other => panic!("expected a bad request, got {:?}", other.map(|_| ())),
        }
    }

    #[test]
    fn errors_never_quote_input() {
        let canary = "CANARY-7f3a";
        for body in [
            format!(r#"{{"value": "x", "flag": "{canary}"}}"#),
            format!(r#"{{"value": 1, "flag": "{canary}"}}"#),
            format!(r#"{{"value": "{canary}"#),
            format!(r#"{{"value": "{canary}", "flag": true, "value": "{canary}"}}"#),
            format!(r#"["{canary}"]"#),
            format!(r#"{{"value": "x", "flag": "expected-{canary}"}}"#),
        ] {
            let m = message(&body);
            assert!(!m.contains(canary), "{m}");
        }
    }

    #[test]
    fn only_one_json_value_is_taken() {
        assert!(parse_json::<Body>(br#"{"value": "x"}  "#).is_ok());
        let trailing = parse_json::<Body>(br#"{"value": "x"} {"value": "y"}"#);
        assert!(matches!(
            trailing,
            Err(Error::BadRequest {
                code: "invalid_body",
                ..
            })
        ));
        assert!(parse_json::<Body>(br#"{"value": "x"}garbage"#).is_err());
    }

    #[test]
    fn errors_name_the_field_and_what_was_expected() {
        assert!(
            message(r#"{"value": "x", "flag": "yes"}"#).contains("expected a boolean (at `flag`)")
        );
        let unknown = message(r#"{"value": "x", "extra-CANARY": 1}"#);
        assert!(
            unknown.contains("unknown field; allowed: `value`"),
            "{unknown}"
        );
        assert!(!unknown.contains("CANARY"), "{unknown}");
        assert!(message(r#"{}"#).contains("missing field `value`"));
        assert!(message(r#"{"value": "#).contains("not valid JSON"));
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// Any bytes as a body: a parse or a refusal that quotes nothing
        /// of what was sent.
        #[test]
        fn no_body_is_quoted_back(
            pieces in proptest::collection::vec(prop_oneof![
                Just("{"), Just("}"), Just("["), Just("]"), Just(","), Just(":"), Just("\""),
                Just("\"value\""), Just("\"flag\""), Just("true"), Just("1e999"), Just("-0"),
                Just("\"CANARY-77\""), Just("CANARY-77"), Just("\\u0000"), Just("null"),
            ], 0..16),
        ) {
            let body = pieces.concat();
            if let Err(err) = parse_json::<Body>(body.as_bytes()) {
                prop_assert!(!err.to_string().contains("CANARY-77"), "{body:?}: {err}");
            }
        }
    }
}
