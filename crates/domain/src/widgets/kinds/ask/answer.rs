//! Reading a person's answers to questions: picked labels (`answer.{i}`)
//! and typed text (`other.{i}`), checked against the questions asked.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::input::Question;
use super::parse::about;
use super::{AskParams, MAX_LABEL_CHARS, MAX_OTHER_CHARS};
use crate::error::{Error, Result};

/// `422 unknown_option`, quoting nothing sent.
fn not_an_option() -> Error {
    Error::invalid("unknown_option", "an answer is not one of the options")
}

impl AskParams {
    /// Reads an answer: for question `i`, the picked labels (`answer.i`,
    /// repeated for multi-select) and free text (`other.i`). Every question
    /// needs an answer; a typed answer is kept as typed. A choice is
    /// answered with its `value` (its label when it has none); a
    /// multi-select question with an array.
    pub fn answers(&self, fields: &[(String, String)]) -> Result<BTreeMap<String, Value>> {
        self.check_fields(fields)?;
        let mut answers = BTreeMap::new();
        for (i, q) in self.questions.iter().enumerate() {
            let answer = self.answer(i, q, fields).map_err(about(i, &q.question))?;
            answers.insert(q.question.clone(), answer);
        }
        Ok(answers)
    }

    /// Reads the answer shapes of the specifications these questions come
    /// from as the form's fields, for a widget of one question: wick's
    /// `Answer{value, text}` (a picked option's value or label, and typed
    /// text; when both are given the value wins and the text is dropped)
    /// and nebo's `{value}` (a `checkbox` answered as its labels joined
    /// with commas). Fields of the form itself pass unchanged.
    pub fn value_text_fields(&self, fields: Vec<(String, String)>) -> Vec<(String, String)> {
        let foreign = |k: &str| k == "value" || k == "text";
        let ([q], true) = (
            self.questions.as_slice(),
            fields.iter().any(|(k, _)| foreign(k)),
        ) else {
            return fields;
        };
        if fields.iter().any(|(k, _)| !foreign(k)) {
            return fields;
        }
        let field = |key: &str| {
            fields
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        };
        let (value, text) = (field("value"), field("text"));
        let option = |v: &str| {
            let v = v.trim();
            q.options
                .iter()
                .find(|o| o.value.as_deref() == Some(v))
                .or_else(|| q.options.iter().find(|o| o.label == v))
                .map_or_else(|| v.to_owned(), |o| o.label.clone())
        };
        match value.filter(|v| !v.trim().is_empty()) {
            Some(v) if q.multi_select && !q.options.iter().any(|o| o.answer() == v.trim()) => v
                .split(',')
                .filter(|part| !part.trim().is_empty())
                .map(|part| ("answer.0".to_owned(), option(part)))
                .collect(),
            Some(v) => vec![("answer.0".to_owned(), option(v))],
            None => text
                .map(|t| vec![("other.0".to_owned(), t.to_owned())])
                .unwrap_or_default(),
        }
    }

    /// Only the fields this form has: `answer.{i}` of each question (as
    /// many as it has options), `other.{i}` once where a typed answer is
    /// offered. Anything else is refused as `invalid_body`, naming no key
    /// or value sent.
    fn check_fields(&self, fields: &[(String, String)]) -> Result<()> {
        let index = |digits: &str| {
            let i: usize = digits.parse().ok()?;
            (i < self.questions.len() && digits == i.to_string()).then_some(i)
        };
        let mut picks = vec![0; self.questions.len()];
        let mut typed = vec![false; self.questions.len()];
        for (key, value) in fields {
            let declared = if let Some(i) = key.strip_prefix("answer.").and_then(index) {
                picks[i] += 1;
                if value.chars().count() > MAX_LABEL_CHARS {
                    return Err(about(i, &self.questions[i].question)(not_an_option()));
                }
                picks[i] <= self.questions[i].options.len()
            } else if let Some(i) = key.strip_prefix("other.").and_then(index) {
                let first = !std::mem::replace(&mut typed[i], true);
                first && self.freeform(&self.questions[i])
            } else {
                false
            };
            if !declared {
                return Err(Error::BadRequest {
                    code: "invalid_body",
                    message: "the answer has a field this form does not have; allowed: \
                              `answer.N` and, where a typed answer is offered, `other.N`"
                        .into(),
                });
            }
        }
        Ok(())
    }

    fn answer(&self, i: usize, q: &Question, fields: &[(String, String)]) -> Result<Value> {
        let mut picked = Vec::new();
        for (_, label) in fields
            .iter()
            .filter(|(k, v)| *k == format!("answer.{i}") && !v.is_empty())
        {
            let Some(at) = q.options.iter().position(|o| o.label == *label) else {
                return Err(not_an_option());
            };
            picked.push(at);
        }
        // In the options' order, each once, however the form sent them.
        picked.sort_unstable();
        picked.dedup();
        let mut picked: Vec<String> = picked
            .into_iter()
            .map(|at| q.options[at].answer().to_owned())
            .collect();
        if !q.multi_select && picked.len() > 1 {
            return Err(Error::invalid("single_answer", "pick one answer"));
        }
        let other = match self.freeform(q) {
            false => "",
            true => fields
                .iter()
                .find(|(k, _)| *k == format!("other.{i}"))
                .map(|(_, v)| v.as_str())
                .unwrap_or(""),
        };
        if other.chars().count() > MAX_OTHER_CHARS {
            return Err(Error::invalid(
                "answer_too_long",
                format!("an answer has at most {MAX_OTHER_CHARS} characters"),
            ));
        }
        let typed = !other.trim().is_empty();
        if picked.is_empty() && !typed {
            return Err(Error::invalid("answer_required", "an answer is needed"));
        }
        if !q.multi_select && !picked.is_empty() && typed {
            return Err(Error::invalid(
                "ambiguous_answer",
                "pick an option or type an answer, not both",
            ));
        }
        if typed {
            picked.push(other.to_owned());
        }
        Ok(match q.multi_select {
            true => json!(picked),
            false => json!(picked.remove(0)),
        })
    }

    /// The answer map as the agent receives it.
    pub fn result(answers: &BTreeMap<String, Value>, by: &str) -> Value {
        json!({ "answers": answers, "answered_by": by })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::widgets::kinds::ask::input::AskInput;
    use crate::widgets::kinds::ask::question;

    #[test]
    fn values_answer_for_labels_and_freeform_is_opt_in_for_simple_widgets() {
        let input: AskInput = serde_json::from_value(json!({
            "items": [
                { "question": "Env?", "label": "Target", "widget": "radio",
                  "options": [{ "label": "Production", "value": "prod" }, "staging"] },
                { "question": "Notify?", "widget": "checkbox", "options": ["Slack", "Mail"],
                  "allow_freeform": true },
            ]
        }))
        .unwrap();
        let p = AskParams::parse_simple(&input).unwrap();
        assert!(!p.answered_by_button());
        let f = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Vec<_>>()
        };
        let answers = p
            .answers(&f(&[
                ("answer.0", "Production"),
                ("answer.1", "Mail"),
                ("other.1", "a pager, please"),
            ]))
            .unwrap();
        assert_eq!(answers["Env?"], "prod");
        assert_eq!(answers["Notify?"], json!(["Mail", "a pager, please"]));
        // The first item offers no typed answer: its `other.0` is no field
        // of this form.
        let typed = p.answers(&f(&[("other.0", "qa"), ("answer.1", "Slack")]));
        assert!(matches!(
            typed,
            Err(Error::BadRequest {
                code: "invalid_body",
                ..
            })
        ));
        let missing = p.answers(&f(&[("answer.1", "Slack")]));
        assert!(matches!(
            missing,
            Err(Error::Invalid {
                code: "answer_required",
                ..
            })
        ));
    }

    #[test]
    fn wicks_and_nebos_answers_read_as_the_forms_fields() {
        let f = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Vec<_>>()
        };
        let input: AskInput = serde_json::from_value(json!({
            "question": "Env?", "widget": "radio", "allow_freeform": true,
            "options": [{ "label": "Production", "value": "prod" }, "staging"]
        }))
        .unwrap();
        let p = AskParams::parse_simple(&input).unwrap();
        // The value wins over the text; a value or a label names the option.
        for (given, answer) in [
            (vec![("value", "prod"), ("text", "later")], "prod"),
            (vec![("value", "Production")], "prod"),
            (vec![("text", "qa, please")], "qa, please"),
            (vec![("value", " "), ("text", "qa")], "qa"),
        ] {
            let fields = p.value_text_fields(f(&given));
            assert_eq!(p.answers(&fields).unwrap()["Env?"], answer, "{given:?}");
        }
        // The form's own fields, or a mix, pass unchanged (and are refused).
        let mixed = f(&[("value", "prod"), ("answer.0", "staging")]);
        assert_eq!(p.value_text_fields(mixed.clone()), mixed);
        let checkbox: AskInput = serde_json::from_value(json!({
            "question": "Files?", "widget": "checkbox", "options": ["a, b", "c", "d"]
        }))
        .unwrap();
        let p = AskParams::parse_simple(&checkbox).unwrap();
        let answers = p
            .answers(&p.value_text_fields(f(&[("value", "c,d")])))
            .unwrap();
        assert_eq!(answers["Files?"], json!(["c", "d"]));
        let whole = p
            .answers(&p.value_text_fields(f(&[("value", "a, b")])))
            .unwrap();
        assert_eq!(
            whole["Files?"],
            json!(["a, b"]),
            "a label with a comma is whole"
        );
    }

    #[test]
    fn only_the_forms_own_fields_are_read_and_nothing_sent_is_quoted() {
        let p = AskParams {
            questions: vec![question("Which DB?", &["Postgres", "SQLite"], false)],
            simple: None,
            default: None,
            agent_name: None,
        };
        let f = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Vec<_>>()
        };
        let canary = "canary-4821";
        for fields in [
            vec![("answer.0", "SQLite"), ("other.1", canary)],
            vec![("answer.0", "SQLite"), (canary, "x")],
            vec![("other.0", "a"), ("other.0", canary)],
            vec![("answer.00", canary)],
            vec![
                ("answer.0", "SQLite"),
                ("answer.0", "SQLite"),
                ("answer.0", canary),
            ],
        ] {
            match p.answers(&f(&fields)) {
                Err(Error::BadRequest { code, message }) => {
                    assert_eq!(code, "invalid_body", "{fields:?}");
                    assert!(!message.contains(canary), "{message}");
                }
                other => panic!("{fields:?}: {other:?}"),
            }
        }
        let long = "x".repeat(crate::widgets::kinds::ask::MAX_LABEL_CHARS + 1);
        for label in [canary, long.as_str()] {
            match p.answers(&f(&[("answer.0", label)])) {
                Err(Error::Invalid { code, message }) => {
                    assert_eq!(code, "unknown_option");
                    assert!(!message.contains(label), "{message}");
                }
                other => panic!("{other:?}"),
            }
        }
        let long = "é".repeat(crate::widgets::kinds::ask::MAX_OTHER_CHARS + 1);
        assert!(matches!(
            p.answers(&f(&[("other.0", &long)])),
            Err(Error::Invalid {
                code: "answer_too_long",
                ..
            })
        ));
    }

    #[test]
    fn answers_are_keyed_by_question_and_multi_select_is_an_array() {
        let p = AskParams {
            questions: vec![
                question("Which DB?", &["Postgres", "SQLite"], false),
                question("Regions?", &["EU", "US", "APAC"], true),
            ],
            simple: None,
            default: None,
            agent_name: None,
        };
        let f = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Vec<_>>()
        };
        let answers = p
            .answers(&f(&[
                ("answer.0", "SQLite"),
                ("answer.1", "EU"),
                ("answer.1", "APAC"),
            ]))
            .unwrap();
        assert_eq!(answers["Which DB?"], "SQLite");
        assert_eq!(answers["Regions?"], json!(["EU", "APAC"]));
        let typed = p
            .answers(&f(&[("other.0", "  DuckDB, please "), ("answer.1", "US")]))
            .unwrap();
        assert_eq!(
            typed["Which DB?"], "  DuckDB, please ",
            "a typed answer is kept as typed"
        );
        let missing = p.answers(&f(&[("answer.0", "SQLite")]));
        assert!(matches!(
            missing,
            Err(Error::Invalid {
                code: "answer_required",
                ..
            })
        ));
        let unknown = p.answers(&f(&[("answer.0", "Oracle"), ("answer.1", "EU")]));
        assert!(matches!(
            unknown,
            Err(Error::Invalid {
                code: "unknown_option",
                ..
            })
        ));
    }
}
