//! Reading a person's answers to questions: picked labels (`answer.{i}`)
//! and typed text (`other.{i}`), checked against the questions asked.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::input::Question;
use super::parse::about;
use super::{AskParams, MAX_OTHER_CHARS, invalid};
use crate::error::AppResult;

impl AskParams {
    /// Reads an answer: for question `i`, the picked labels (`answer.i`,
    /// repeated for multi-select) and free text (`other.i`). Every question
    /// needs an answer; a typed answer is kept as typed. A choice is
    /// answered with its `value` (its label when it has none); a
    /// multi-select question with an array.
    pub fn answers(&self, fields: &[(String, String)]) -> AppResult<BTreeMap<String, Value>> {
        let mut answers = BTreeMap::new();
        for (i, q) in self.questions.iter().enumerate() {
            let answer = self.answer(i, q, fields).map_err(about(i, &q.question))?;
            answers.insert(q.question.clone(), answer);
        }
        Ok(answers)
    }

    fn answer(&self, i: usize, q: &Question, fields: &[(String, String)]) -> AppResult<Value> {
        let mut picked = Vec::new();
        for (_, label) in fields
            .iter()
            .filter(|(k, v)| *k == format!("answer.{i}") && !v.is_empty())
        {
            let Some(at) = q.options.iter().position(|o| o.label == *label) else {
                return Err(invalid(
                    "unknown_option",
                    format!("\"{label}\" is not an option"),
                ));
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
            return Err(invalid("single_answer", "pick one answer".into()));
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
            return Err(invalid(
                "answer_too_long",
                format!("an answer has at most {MAX_OTHER_CHARS} characters"),
            ));
        }
        let typed = !other.trim().is_empty();
        if picked.is_empty() && !typed {
            return Err(invalid("answer_required", "an answer is needed".into()));
        }
        if !q.multi_select && !picked.is_empty() && typed {
            return Err(invalid(
                "ambiguous_answer",
                "pick an option or type an answer, not both".into(),
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
    use crate::error::AppError;
    use crate::widgets::ask::input::AskInput;
    use crate::widgets::ask::question;

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
        // The first item offers no typed answer.
        let typed = p.answers(&f(&[("other.0", "qa"), ("answer.1", "Slack")]));
        assert!(matches!(
            typed,
            Err(AppError::Invalid {
                code: "answer_required",
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
            Err(AppError::Invalid {
                code: "answer_required",
                ..
            })
        ));
        let unknown = p.answers(&f(&[("answer.0", "Oracle"), ("answer.1", "EU")]));
        assert!(matches!(
            unknown,
            Err(AppError::Invalid {
                code: "unknown_option",
                ..
            })
        ));
    }
}
