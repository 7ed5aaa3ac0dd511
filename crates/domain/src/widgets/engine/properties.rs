//! Property tests of every widget kind's edge: an agent's request and a
//! person's answer, made hostile. Each kind gets one line below; the
//! generators ([`mutated`], [`hostile_text`], [`answer_fields`]) are for
//! the kinds still to come.
//!
//! Properties: nothing panics; a refusal of a person's answer never quotes
//! what was sent (every generated string carries [`CANARY`], which no such
//! error may contain); a refusal of an agent's request may name the
//! agent's own question (issue 16: errors name the question), but quotes
//! nothing else, shortened and escaped, never a hidden character.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::kind::{AnswerBody, Kind, Request};
use crate::error::Error;
use crate::input::parse_value;
use crate::widgets::kinds::approval::Approval;
use crate::widgets::kinds::ask::{Ask, AskUser, Questions};
use crate::widgets::kinds::clarification::Clarification;
use crate::widgets::kinds::env_vars::EnvVars;
use crate::widgets::kinds::fields::{Fields, check};

/// In every generated string; in no error message.
pub(crate) const CANARY: &str = "CANARY-5e7a";

/// Text an attacker would send: empty, long, control and bidi characters,
/// markup, NUL — always with [`CANARY`] in it.
pub(crate) fn hostile_text() -> BoxedStrategy<String> {
    prop_oneof![
        Just(CANARY.to_owned()),
        (any::<String>(), any::<String>()).prop_map(|(a, b)| format!("{a}{CANARY}{b}")),
        "[ -~]{0,40}".prop_map(|s| format!("{s}{CANARY}")),
        Just(format!(
            "{CANARY}\u{202e}\u{200b}\0\r\n<script>alert(1)</script>"
        )),
        Just(format!("{CANARY}{}", "x".repeat(70_000))),
    ]
    .boxed()
}

/// `valid` with its leaves replaced at random: strings by hostile text,
/// numbers by extremes, anything by the wrong type; object keys dropped
/// or added, arrays cut or grown.
pub(crate) fn mutated(valid: &Value) -> BoxedStrategy<Value> {
    let keep = Just(valid.clone());
    let wrong_type = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        hostile_text().prop_map(Value::from),
        Just(json!([CANARY])),
        Just(json!({ CANARY: CANARY })),
    ];
    match valid {
        Value::Object(map) => {
            let fields: Vec<_> = map
                .iter()
                .map(|(k, v)| (Just(k.clone()), mutated(v), any::<bool>()))
                .collect();
            (fields, proptest::option::of(hostile_text()))
                .prop_map(|(fields, extra)| {
                    let mut out: serde_json::Map<String, Value> = fields
                        .into_iter()
                        .filter(|(_, _, dropped)| !dropped)
                        .map(|(k, v, _)| (k, v))
                        .collect();
                    if let Some(key) = extra {
                        out.insert(key, json!(CANARY));
                    }
                    Value::Object(out)
                })
                .boxed()
        }
        Value::Array(items) => {
            let parts: Vec<_> = items.iter().map(mutated).collect();
            (parts, 0..=items.len() + 1)
                .prop_map(|(mut parts, len)| {
                    let first = parts.first().cloned().unwrap_or(json!(CANARY));
                    parts.resize(len, first);
                    Value::Array(parts)
                })
                .boxed()
        }
        _ => prop_oneof![3 => keep, 2 => wrong_type].boxed(),
    }
}

/// A person's form: the fields kinds read, and others, with hostile values.
pub(crate) fn answer_fields() -> BoxedStrategy<Vec<(String, String)>> {
    let key = prop_oneof![
        Just("scope".to_owned()),
        Just("decision".to_owned()),
        Just("reason".to_owned()),
        Just("note".to_owned()),
        Just("freeform".to_owned()),
        Just("choice".to_owned()),
        (0..8usize).prop_map(|i| format!("answer.{i}")),
        (0..8usize).prop_map(|i| format!("other.{i}")),
        "[A-Z_]{1,12}".prop_map(|n| format!("value.{n}")),
        hostile_text().prop_map(|t| format!("value.{t}")),
        hostile_text(),
    ];
    proptest::collection::vec((key, hostile_text()), 0..8).boxed()
}

/// Runs `R::parse` on mutations of `valid`: no panic, and a refusal is
/// short and shows no hidden character raw.
fn check_request<R: Request>(valid: Value) {
    proptest!(ProptestConfig::with_cases(300), |(input in mutated(&valid))| {
        if let Err(err) = parse_value::<R::Input>(input).and_then(R::parse) {
            let message = err.public_message();
            assert!(message.len() < 1000, "an unbounded refusal: {} bytes", message.len());
            assert!(!message.contains(['\0', '\u{202e}', '\u{200b}', '\r']), "{message:?}");
        }
    });
}

/// Runs `K::read` on hostile forms and JSON bodies: no panic, no echo.
fn check_answer<K: Kind>() {
    proptest!(ProptestConfig::with_cases(300), |(fields in answer_fields())| {
        let object: serde_json::Map<String, Value> =
            fields.iter().map(|(k, v)| (k.clone(), Value::from(v.as_str()))).collect();
        let json = serde_json::to_vec(&object).unwrap();
        let form = fields.into_iter().map(|(k, v)| (k, v.into())).collect();
        for body in [AnswerBody::Form(form), AnswerBody::Json(json.into())] {
            if let Err(err) = K::read(body) {
                assert_no_echo(&err);
            }
        }
    });
}

fn assert_no_echo(err: &Error) {
    let message = err.public_message();
    assert!(
        !message.contains(CANARY),
        "the refusal quotes the input: {message}"
    );
}

#[test]
fn env_vars_requests_and_answers() {
    check_request::<EnvVars>(json!({
        "names": ["API_KEY", "OTHER"], "reason": "to deploy", "instructions": "from the console",
        "default_scope": "session",
        "variable_metadata": { "API_KEY": { "description": "the key", "example": "sk-…", "multiline": false } },
    }));
    check_answer::<EnvVars>();
}

#[test]
fn ask_user_requests() {
    check_request::<AskUser>(json!({
        "questions": [{
            "question": "Which database?", "header": "Database", "multi_select": false,
            "options": [{ "label": "Postgres", "description": "a server", "preview_markdown": "**x**" },
                        { "label": "SQLite", "value": "sqlite" }],
            "allow_freeform": true,
        }],
        "wait_seconds": 30,
    }));
}

#[test]
fn ask_requests_and_question_answers() {
    check_request::<Ask>(json!({
        "question": "Which one?", "widget": "select", "options": ["a", "b"], "default": "b",
        "items": [{ "question": "Deploy?", "widget": "confirm" }],
    }));
    check_answer::<Questions>();
}

#[test]
fn approval_requests_and_decisions() {
    check_request::<Approval>(json!({
        "tool": "Bash", "input": { "command": "rm -rf build", "nested": [1, "two"] },
        "reason": "clean the build", "allow_edit": true, "approvers": 2,
    }));
    check_answer::<Approval>();
}

#[test]
fn typed_question_requests_and_answers() {
    let valid = json!({
        "question": "Where is staging?",
        "fields": [
            { "name": "url", "label": "URL", "type": "url", "description": "where", "required": true,
              "min": 10, "max": 200, "pattern": "https://[a-z.]+/?", "default": "https://x.example" },
            { "name": "port", "type": "integer", "min": 1, "max": 65535, "default": 8080 },
            { "name": "ok", "type": "boolean", "default": true },
        ],
        "wait_seconds": 5,
    });
    check_request::<Fields>(valid.clone());
    check_answer::<Fields>();
    // Every field's check, on hostile answers: no panic, no echo.
    let input = parse_value::<<Fields as Request>::Input>(valid).unwrap();
    let params = Fields::parse(input).unwrap();
    let names = prop_oneof![Just("url"), Just("port"), Just("ok")];
    proptest!(ProptestConfig::with_cases(300), |(raw in proptest::collection::vec((names, hostile_text()), 0..6))| {
        let raw: Vec<(String, String)> = raw.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        if let Err(err) = check::answers(&params.fields, &raw) {
            assert_no_echo(&err);
        }
    });
}

#[test]
fn clarification_requests_and_answers() {
    check_request::<Clarification>(json!({
        "question": "Which region?",
        "widget": { "type": "choice", "multi_select": true,
                    "options": [{ "label": "EU", "description": "Frankfurt" },
                                { "label": "US", "markdown": "Needs **US_REGION**" }, { "label": "APAC" }] },
        "wait_seconds": 30,
    }));
    check_answer::<Clarification>();
}
