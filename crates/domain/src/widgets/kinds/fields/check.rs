//! A person's typed answers checked field by field: every field is
//! checked, and a refusal names each field that failed with its own code
//! and a message that says what to fix, never what was typed.

use serde_json::{Number, Value};

use super::spec::{Field, FieldType, MAX_MAGNITUDE, compile_pattern};
use crate::error::{Error, Result};

/// Why one field's answer was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub code: &'static str,
    pub message: String,
}

fn err(code: &'static str, message: impl Into<String>) -> FieldError {
    FieldError {
        code,
        message: message.into(),
    }
}

/// The refusal of several fields: `422` with the first field's code, and a
/// message that names each field (`field `port` (out_of_range): …`), one
/// per `; `. The card reads it back to show each error at its field.
pub fn refusal(errors: &[(&Field, FieldError)]) -> Error {
    let code = errors.first().map_or("invalid_fields", |(_, e)| e.code);
    let message = errors
        .iter()
        .map(|(f, e)| format!("field `{}` ({}): {}", f.name, e.code, e.message))
        .collect::<Vec<_>>()
        .join("; ");
    Error::invalid(code, message)
}

/// The errors of a refusal built by [`refusal`], by field name.
pub fn read_refusal(message: &str) -> Vec<(String, String)> {
    message
        .split("; ")
        .filter_map(|part| {
            let rest = part.strip_prefix("field `")?;
            let (name, rest) = rest.split_once("` (")?;
            let (_, text) = rest.split_once("): ")?;
            Some((name.to_owned(), text.to_owned()))
        })
        .collect()
}

/// Checks `raw` (as typed; a number or boolean as its text) against
/// `field`: the answer as the agent gets it, or `None` when nothing was
/// given (which the caller refuses for a required field).
pub fn value(field: &Field, raw: &str) -> Result<Option<Value>, FieldError> {
    let t = field.field_type;
    let text = match t {
        FieldType::Multiline => raw.replace("\r\n", "\n"),
        FieldType::Text => raw.to_owned(),
        _ => raw.trim().to_owned(),
    };
    if text.trim().is_empty() && t != FieldType::Boolean {
        return Ok(None);
    }
    match t {
        FieldType::Boolean => boolean(&text).map(Some),
        FieldType::Number | FieldType::Integer => number(field, &text).map(Some),
        FieldType::Date => date(&text).map(Some),
        _ => string(field, text).map(Some),
    }
}

fn boolean(text: &str) -> Result<Value, FieldError> {
    match text.trim() {
        "true" | "on" => Ok(Value::Bool(true)),
        "false" | "" => Ok(Value::Bool(false)),
        _ => Err(err("invalid_boolean", "must be true or false")),
    }
}

fn number(field: &Field, text: &str) -> Result<Value, FieldError> {
    let integer = field.field_type == FieldType::Integer;
    let (value, json) = if integer {
        let n: i64 = text
            .parse()
            .map_err(|_| err("invalid_integer", "must be a whole number, like 42"))?;
        (n as f64, Value::Number(Number::from(n)))
    } else {
        let plain = text
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E'));
        let n: f64 = text
            .parse()
            .ok()
            .filter(|n: &f64| plain && n.is_finite())
            .ok_or_else(|| err("invalid_number", "must be a number, like 3.5"))?;
        let json = match Number::from_f64(n) {
            Some(_) if n.fract() == 0.0 && n.abs() <= MAX_MAGNITUDE => {
                Value::Number(Number::from(n as i64))
            }
            Some(num) => Value::Number(num),
            None => return Err(err("invalid_number", "must be a number, like 3.5")),
        };
        (n, json)
    };
    if value.abs() > MAX_MAGNITUDE {
        return Err(err(
            "out_of_range",
            format!("must be at most {MAX_MAGNITUDE} in magnitude"),
        ));
    }
    if let Some(min) = field.min
        && value < min
    {
        return Err(err("out_of_range", format!("must be at least {min}")));
    }
    if let Some(max) = field.max
        && value > max
    {
        return Err(err("out_of_range", format!("must be at most {max}")));
    }
    Ok(json)
}

fn date(text: &str) -> Result<Value, FieldError> {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    let ok = text.len() == 10 && time::Date::parse(text, &format).is_ok();
    match ok {
        true => Ok(Value::String(text.to_owned())),
        false => Err(err("invalid_date", "must be a date, YYYY-MM-DD")),
    }
}

fn string(field: &Field, text: String) -> Result<Value, FieldError> {
    let t = field.field_type;
    let len = text.chars().count();
    let max = field.max.map_or(t.max_chars(), |m| m as usize);
    if len > max {
        return Err(err(
            "too_long",
            format!("has at most {max} characters; this answer has {len}"),
        ));
    }
    if let Some(min) = field.min
        && (len as f64) < min
    {
        return Err(err("too_short", format!("needs at least {min} characters")));
    }
    let allowed =
        |c: char| !c.is_control() || (t == FieldType::Multiline && matches!(c, '\n' | '\t'));
    if !text.chars().all(allowed) {
        let what = match t {
            FieldType::Multiline => "plain text: no control characters but line breaks and tabs",
            _ => "one line of plain text: no line breaks or control characters",
        };
        return Err(err("invalid_text", format!("must be {what}")));
    }
    match t {
        FieldType::Email if !is_email(&text) => {
            return Err(err(
                "invalid_email",
                "must be an email address (name@domain)",
            ));
        }
        FieldType::Url if !is_url(&text) => {
            return Err(err(
                "invalid_url",
                "must be an http or https URL (https://…)",
            ));
        }
        _ => {}
    }
    if let Some(pattern) = &field.pattern {
        let matches = compile_pattern(pattern).is_some_and(|re| re.is_match(&text));
        if !matches {
            return Err(err("pattern_mismatch", "does not have the form asked for"));
        }
    }
    Ok(Value::String(text))
}

/// `local@domain.tld`: one `@`, no spaces, a dot in the domain, at most
/// 254 characters (what a form's `type=email` accepts, roughly), and no
/// hidden character (a bidi override would show the address reversed).
fn is_email(text: &str) -> bool {
    if crate::widgets::engine::text::visible_controls(text) != text {
        return false;
    }
    let Some((local, domain)) = text.split_once('@') else {
        return false;
    };
    let label_ok = |l: &str| {
        !l.is_empty()
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars().all(|c| c.is_alphanumeric() || c == '-')
    };
    text.len() <= 254
        && !local.is_empty()
        && !local.contains([
            '@', ' ', '"', '(', ')', ',', ':', ';', '<', '>', '[', '\\', ']',
        ])
        && domain.contains('.')
        && domain.split('.').all(label_ok)
}

/// An absolute `http` or `https` URL with a host.
fn is_url(text: &str) -> bool {
    !text.contains(char::is_whitespace)
        && url::Url::parse(text)
            .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
}

/// Checks every field's answer (`raw` by field name) and returns the
/// answers by name (`null` for an optional field left empty); refused with
/// every failing field named.
pub fn answers(
    fields: &[Field],
    raw: &[(String, String)],
) -> Result<serde_json::Map<String, Value>> {
    let mut out = serde_json::Map::new();
    let mut errors = Vec::new();
    for field in fields {
        let given: Vec<&str> = raw
            .iter()
            .filter(|(k, _)| k == &field.name)
            .map(|(_, v)| v.as_str())
            .collect();
        // A check box sends a hidden `false` then `true` when ticked.
        let text = match (field.field_type, given.as_slice()) {
            (FieldType::Boolean, many) if many.contains(&"true") => "true",
            (FieldType::Boolean, []) => "false",
            (_, [one, ..]) => one,
            (_, []) => "",
        };
        match value(field, text) {
            Ok(Some(v)) => {
                out.insert(field.name.clone(), v);
            }
            Ok(None) if field.required => {
                errors.push((field, err("field_required", "needs an answer")));
            }
            Ok(None) => {
                out.insert(field.name.clone(), Value::Null);
            }
            Err(e) => errors.push((field, e)),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(refusal(&errors))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::widgets::kinds::fields::spec::{FieldInput, parse_fields};
    use serde_json::json;

    fn fields(v: Value) -> Vec<Field> {
        let input: Vec<FieldInput> = serde_json::from_value(v).unwrap();
        parse_fields(&input).unwrap()
    }

    fn code_of(f: &Field, raw: &str) -> &'static str {
        match value(f, raw) {
            Err(e) => {
                assert!(raw.len() < 4 || !e.message.contains(raw), "{}", e.message);
                e.code
            }
            Ok(v) => panic!("{raw:?} was accepted as {v:?}"),
        }
    }

    #[test]
    fn each_type_reads_and_refuses_with_its_code() {
        let f = fields(json!([
            { "name": "t", "min": 2, "max": 5, "pattern": "[a-z]+" },
            { "name": "m", "type": "multiline" },
            { "name": "n", "type": "number", "min": -1.5, "max": 10 },
            { "name": "i", "type": "integer", "min": 1, "max": 65535 },
            { "name": "b", "type": "boolean" },
            { "name": "e", "type": "email" },
            { "name": "u", "type": "url" },
            { "name": "d", "type": "date" }
        ]));
        let [t, m, n, i, b, e, u, d] = &f[..] else {
            panic!()
        };
        assert_eq!(value(t, "abc").unwrap(), Some(json!("abc")));
        assert_eq!(code_of(t, "a"), "too_short");
        assert_eq!(code_of(t, "abcdef"), "too_long");
        assert_eq!(code_of(t, "ab1"), "pattern_mismatch");
        assert_eq!(code_of(t, "a\nb"), "invalid_text");
        assert_eq!(value(m, "a\r\nb\tc").unwrap(), Some(json!("a\nb\tc")));
        assert_eq!(code_of(m, "a\u{1b}b"), "invalid_text");
        assert_eq!(value(n, " 2.5 ").unwrap(), Some(json!(2.5)));
        assert_eq!(value(n, "3").unwrap(), Some(json!(3)));
        assert_eq!(code_of(n, "NaN"), "invalid_number");
        assert_eq!(code_of(n, "inf"), "invalid_number");
        assert_eq!(code_of(n, "0x10"), "invalid_number");
        assert_eq!(code_of(n, "11"), "out_of_range");
        assert_eq!(value(i, "8080").unwrap(), Some(json!(8080)));
        assert_eq!(code_of(i, "1.5"), "invalid_integer");
        assert_eq!(code_of(i, "0"), "out_of_range");
        assert_eq!(value(b, "").unwrap(), Some(json!(false)));
        assert_eq!(value(b, "true").unwrap(), Some(json!(true)));
        assert_eq!(code_of(b, "maybe"), "invalid_boolean");
        assert_eq!(
            value(e, "a.b@example.com").unwrap(),
            Some(json!("a.b@example.com"))
        );
        for bad in [
            "a@b",
            "a b@c.d",
            "@c.d",
            "a@@c.d",
            "a@-c.d",
            "\u{202e}moc.elpmaxe@a",
            "a\u{200b}@example.com",
        ] {
            assert_eq!(code_of(e, bad), "invalid_email", "{bad}");
        }
        assert!(
            value(u, "https://staging.example.com/x?y=1")
                .unwrap()
                .is_some()
        );
        for bad in [
            "javascript:alert(1)",
            "ftp://x.y",
            "example.com",
            "https:// x",
        ] {
            assert_eq!(code_of(u, bad), "invalid_url", "{bad}");
        }
        assert_eq!(value(d, "2026-02-28").unwrap(), Some(json!("2026-02-28")));
        for bad in ["2026-02-30", "26-1-1", "2026-1-01", "tomorrow"] {
            assert_eq!(code_of(d, bad), "invalid_date", "{bad}");
        }
        assert_eq!(value(t, "  ").unwrap(), None);
    }

    #[test]
    fn every_failing_field_is_named_with_its_code() {
        let f = fields(json!([
            { "name": "url", "type": "url" },
            { "name": "port", "type": "integer", "max": 65535 },
            { "name": "note", "required": false },
            { "name": "ok", "type": "boolean" }
        ]));
        let raw = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Vec<_>>()
        };
        let got = answers(
            &f,
            &raw(&[
                ("url", "https://x.y"),
                ("port", "80"),
                ("ok", "false"),
                ("ok", "true"),
            ]),
        )
        .unwrap();
        assert_eq!(
            Value::Object(got),
            json!({ "url": "https://x.y", "port": 80, "note": null, "ok": true })
        );
        match answers(&f, &raw(&[("port", "70000")])) {
            Err(Error::Invalid { code, message }) => {
                assert_eq!(code, "field_required");
                assert_eq!(
                    read_refusal(&message),
                    [
                        ("url".to_owned(), "needs an answer".to_owned()),
                        ("port".to_owned(), "must be at most 65535".to_owned())
                    ]
                );
                assert!(message.contains("(out_of_range)"), "{message}");
                assert!(!message.contains("70000"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn patterns_match_in_linear_time() {
        let f = fields(json!([{ "name": "t", "pattern": "(a+)+b" }]));
        let start = std::time::Instant::now();
        assert_eq!(code_of(&f[0], &"a".repeat(1000)), "pattern_mismatch");
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn a_pattern_cannot_close_the_anchor_around_it() {
        // Wrapped as text, `a)|(.*` would read `^(?:a)|(.*)$`: anything.
        assert!(compile_pattern("a)|(.*").is_none());
        assert!(compile_pattern(".*)|(?:x").is_none());
        let either = compile_pattern("a|b").unwrap();
        assert!(either.is_match("a") && either.is_match("b"));
        assert!(!either.is_match("ab") && !either.is_match("xa"));
    }
}
