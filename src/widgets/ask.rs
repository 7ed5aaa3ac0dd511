//! Questions: `ask_user` (1–4 questions with 2–4 options each and a free
//! "Other" answer) and the simple one-question widgets of `ask` (buttons,
//! confirm, select, radio, checkbox). Answers are not secrets: they go back
//! to the agent in the resume prompt.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::{AppError, AppResult};

/// Kind name of `ask_user` widgets and of the simple `ask` widgets.
pub const ASK_USER: &str = "ask_user";
pub const ASK: &str = "ask";

const MAX_QUESTIONS: usize = 4;
const MAX_QUESTION_CHARS: usize = 500;
const MAX_HEADER_CHARS: usize = 12;
const MAX_LABEL_CHARS: usize = 80;
const MAX_DESCRIPTION_CHARS: usize = 300;
const MAX_PREVIEW_CHARS: usize = 4000;
const MAX_SIMPLE_OPTIONS: usize = 10;
const MAX_OTHER_CHARS: usize = 2000;
/// Longest a caller may wait for the answer.
pub const MAX_WAIT_SECS: u64 = 300;

/// One choice of a question.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskOption {
    /// The answer as the agent receives it (1 to 80 characters).
    pub label: String,
    /// What choosing it means (at most 300 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Optional markdown shown as a preview of this choice (at most 4000 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_markdown: Option<String>,
}

/// One question of `ask_user`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// The full question (1 to 500 characters); answers are keyed by it.
    pub question: String,
    /// A short chip shown above it, e.g. "Database" (1 to 12 characters).
    pub header: String,
    /// 2 to 4 choices; a free-text "Other" answer is always offered too.
    pub options: Vec<AskOption>,
    /// Whether several choices may be picked (answered comma-joined).
    #[serde(default)]
    pub multi_select: bool,
}

/// The arguments of `ask_user`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskUserInput {
    /// 1 to 4 questions, answered together in one form.
    pub questions: Vec<Question>,
    /// Wait up to this many seconds (at most 300) for the answer and return
    /// it; past that the call returns `pending` and the answer arrives as a
    /// queued prompt. Default 0: return at once.
    #[serde(default)]
    pub wait_seconds: Option<u64>,
}

/// How a simple question is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SimpleKind {
    /// Yes / No (or the given options) as buttons.
    #[default]
    Confirm,
    /// One button per option.
    Buttons,
    /// A drop-down list.
    Select,
    /// Radio buttons.
    Radio,
    /// Check boxes: several may be picked, answered comma-joined.
    Checkbox,
}

/// The arguments of `ask`: one simple question.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskInput {
    /// The question (1 to 500 characters).
    pub question: String,
    /// `confirm` (default), `buttons`, `select`, `radio` or `checkbox`.
    #[serde(default)]
    pub widget: Option<SimpleKind>,
    /// The choices (2 to 10 labels); `confirm` defaults to Yes / No.
    #[serde(default)]
    pub options: Option<Vec<String>>,
    /// A preselected choice; must be one of the options.
    #[serde(default)]
    pub default: Option<String>,
    /// As for `ask_user`.
    #[serde(default)]
    pub wait_seconds: Option<u64>,
}

/// A validated question widget, as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AskParams {
    pub questions: Vec<Question>,
    /// Set for the simple widgets of `ask`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simple: Option<SimpleKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

fn invalid(code: &'static str, message: String) -> AppError {
    AppError::invalid(code, message)
}

fn len_between(
    text: &str,
    min: usize,
    max: usize,
    code: &'static str,
    what: &str,
) -> AppResult<()> {
    let len = text.trim().chars().count();
    if len < min || text.chars().count() > max {
        return Err(invalid(
            code,
            format!("{what} needs {min} to {max} characters; it has {len}"),
        ));
    }
    Ok(())
}

fn check_labels<'a>(labels: impl Iterator<Item = &'a str>, question: &str) -> AppResult<()> {
    let mut seen = std::collections::BTreeSet::new();
    for label in labels {
        if label.trim().is_empty() {
            return Err(invalid(
                "empty_label",
                format!("an option of \"{question}\" has an empty label"),
            ));
        }
        len_between(
            label,
            1,
            MAX_LABEL_CHARS,
            "label_too_long",
            "an option label",
        )?;
        if !seen.insert(label.trim()) {
            return Err(invalid(
                "duplicate_label",
                format!("\"{question}\" offers the label \"{label}\" twice"),
            ));
        }
    }
    Ok(())
}

/// Validates `wait_seconds`.
pub fn check_wait(wait: Option<u64>) -> AppResult<u64> {
    match wait.unwrap_or(0) {
        w if w > MAX_WAIT_SECS => Err(invalid(
            "wait_too_long",
            format!("`wait_seconds` is at most {MAX_WAIT_SECS}; it is {w}"),
        )),
        w => Ok(w),
    }
}

impl AskParams {
    /// Validates `ask_user` input.
    pub fn parse(input: &AskUserInput) -> AppResult<Self> {
        let count = input.questions.len();
        if count == 0 || count > MAX_QUESTIONS {
            return Err(invalid(
                "questions_count",
                format!("ask 1 to {MAX_QUESTIONS} questions; there are {count}"),
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for q in &input.questions {
            len_between(
                &q.question,
                1,
                MAX_QUESTION_CHARS,
                "invalid_question",
                "a question",
            )?;
            if !seen.insert(q.question.trim()) {
                return Err(invalid(
                    "duplicate_question",
                    format!("\"{}\" is asked twice", q.question),
                ));
            }
            len_between(&q.header, 1, MAX_HEADER_CHARS, "invalid_header", "a header")?;
            if !(2..=4).contains(&q.options.len()) {
                return Err(invalid(
                    "options_count",
                    format!(
                        "\"{}\" needs 2 to 4 options; it has {}",
                        q.question,
                        q.options.len()
                    ),
                ));
            }
            check_labels(q.options.iter().map(|o| o.label.as_str()), &q.question)?;
            for o in &q.options {
                if let Some(d) = &o.description {
                    len_between(
                        d,
                        0,
                        MAX_DESCRIPTION_CHARS,
                        "description_too_long",
                        "an option description",
                    )?;
                }
                if let Some(p) = &o.preview_markdown {
                    len_between(
                        p,
                        0,
                        MAX_PREVIEW_CHARS,
                        "preview_too_long",
                        "an option preview",
                    )?;
                }
            }
        }
        check_wait(input.wait_seconds)?;
        Ok(Self {
            questions: input.questions.clone(),
            simple: None,
            default: None,
        })
    }

    /// Validates `ask` input: one simple question.
    pub fn parse_simple(input: &AskInput) -> AppResult<Self> {
        let kind = input.widget.unwrap_or_default();
        len_between(
            &input.question,
            1,
            MAX_QUESTION_CHARS,
            "invalid_question",
            "the question",
        )?;
        let labels = match (&input.options, kind) {
            (None, SimpleKind::Confirm) => vec!["Yes".to_owned(), "No".to_owned()],
            (None, _) => {
                return Err(invalid(
                    "options_count",
                    "give the `options` to choose from".into(),
                ));
            }
            (Some(options), _) => options.clone(),
        };
        if !(2..=MAX_SIMPLE_OPTIONS).contains(&labels.len()) {
            return Err(invalid(
                "options_count",
                format!(
                    "give 2 to {MAX_SIMPLE_OPTIONS} options; there are {}",
                    labels.len()
                ),
            ));
        }
        check_labels(labels.iter().map(String::as_str), &input.question)?;
        if let Some(default) = &input.default
            && !labels.contains(default)
        {
            return Err(invalid(
                "invalid_default",
                "`default` must be one of the options".into(),
            ));
        }
        check_wait(input.wait_seconds)?;
        let question = Question {
            question: input.question.clone(),
            header: String::new(),
            options: labels
                .into_iter()
                .map(|label| AskOption {
                    label,
                    description: None,
                    preview_markdown: None,
                })
                .collect(),
            multi_select: kind == SimpleKind::Checkbox,
        };
        Ok(Self {
            questions: vec![question],
            simple: Some(kind),
            default: input.default.clone(),
        })
    }

    /// Reads an answer: for question `i`, the picked labels (`answer.i`,
    /// repeated for multi-select) and free text (`other.i`). Every question
    /// needs an answer; a typed answer is kept as typed.
    pub fn answers(&self, fields: &[(String, String)]) -> AppResult<BTreeMap<String, String>> {
        let mut answers = BTreeMap::new();
        for (i, q) in self.questions.iter().enumerate() {
            let mut picked = Vec::new();
            for (_, label) in fields
                .iter()
                .filter(|(k, v)| *k == format!("answer.{i}") && !v.is_empty())
            {
                let Some(at) = q.options.iter().position(|o| o.label == *label) else {
                    return Err(invalid(
                        "unknown_option",
                        format!("\"{label}\" is not an option of \"{}\"", q.question),
                    ));
                };
                picked.push(at);
            }
            // In the options' order, each once, however the form sent them.
            picked.sort_unstable();
            picked.dedup();
            let picked: Vec<&str> = picked
                .into_iter()
                .map(|at| q.options[at].label.as_str())
                .collect();
            if !q.multi_select && picked.len() > 1 {
                return Err(invalid(
                    "single_answer",
                    format!("pick one answer to \"{}\"", q.question),
                ));
            }
            // Simple widgets offer no "Other": only their options count.
            let other = match self.simple {
                Some(_) => "",
                None => fields
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
            let answer = match (picked.is_empty(), other.trim().is_empty()) {
                (true, true) => {
                    return Err(invalid(
                        "answer_required",
                        format!("answer \"{}\"", q.question),
                    ));
                }
                (true, false) => other.to_owned(),
                (false, true) => picked.join(", "),
                (false, false) if q.multi_select => format!("{}, {other}", picked.join(", ")),
                (false, false) => {
                    return Err(invalid(
                        "ambiguous_answer",
                        format!(
                            "pick an option or type an answer to \"{}\", not both",
                            q.question
                        ),
                    ));
                }
            };
            answers.insert(q.question.clone(), answer);
        }
        Ok(answers)
    }

    /// The answer map as the agent receives it.
    pub fn result(answers: &BTreeMap<String, String>, by: &str) -> Value {
        json!({ "answers": answers, "answered_by": by })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(q: &str, labels: &[&str], multi: bool) -> Question {
        Question {
            question: q.into(),
            header: "Chip".into(),
            options: labels
                .iter()
                .map(|l| AskOption {
                    label: l.to_string(),
                    description: None,
                    preview_markdown: None,
                })
                .collect(),
            multi_select: multi,
        }
    }

    fn code(result: AppResult<AskParams>) -> &'static str {
        match result {
            Err(AppError::Invalid { code, .. }) => code,
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[test]
    fn ask_user_limits_have_codes() {
        let ok = AskUserInput {
            questions: vec![question("Which DB?", &["Postgres", "SQLite"], false)],
            wait_seconds: None,
        };
        assert!(AskParams::parse(&ok).is_ok());
        let with = |qs: Vec<Question>, wait: Option<u64>| {
            AskParams::parse(&AskUserInput {
                questions: qs,
                wait_seconds: wait,
            })
        };
        assert_eq!(code(with(vec![], None)), "questions_count");
        let five: Vec<Question> = (0..5)
            .map(|i| question(&format!("Q{i}?"), &["a", "b"], false))
            .collect();
        assert_eq!(code(with(five, None)), "questions_count");
        assert_eq!(
            code(with(vec![question("Q?", &["a"], false)], None)),
            "options_count"
        );
        assert_eq!(
            code(with(
                vec![question("Q?", &["a", "b", "c", "d", "e"], false)],
                None
            )),
            "options_count"
        );
        assert_eq!(
            code(with(vec![question("Q?", &["a", " "], false)], None)),
            "empty_label"
        );
        assert_eq!(
            code(with(vec![question("Q?", &["a", "a"], false)], None)),
            "duplicate_label"
        );
        let mut long_header = question("Q?", &["a", "b"], false);
        long_header.header = "Thirteen char".into();
        assert_eq!(code(with(vec![long_header], None)), "invalid_header");
        assert_eq!(
            code(with(
                vec![
                    question("Q?", &["a", "b"], false),
                    question("Q?", &["c", "d"], false)
                ],
                None
            )),
            "duplicate_question"
        );
        assert_eq!(
            code(with(vec![question("Q?", &["a", "b"], false)], Some(301))),
            "wait_too_long"
        );
    }

    #[test]
    fn simple_widgets_default_to_confirm_and_check_defaults() {
        let p = AskParams::parse_simple(&AskInput {
            question: "Deploy?".into(),
            widget: None,
            options: None,
            default: None,
            wait_seconds: None,
        })
        .unwrap();
        assert_eq!(p.simple, Some(SimpleKind::Confirm));
        assert_eq!(
            p.questions[0]
                .options
                .iter()
                .map(|o| o.label.as_str())
                .collect::<Vec<_>>(),
            ["Yes", "No"]
        );
        let bad = AskInput {
            question: "Pick".into(),
            widget: Some(SimpleKind::Radio),
            options: Some(vec!["a".into(), "b".into()]),
            default: Some("c".into()),
            wait_seconds: None,
        };
        assert_eq!(code(AskParams::parse_simple(&bad)), "invalid_default");
        let none = AskInput {
            question: "Pick".into(),
            widget: Some(SimpleKind::Select),
            options: None,
            default: None,
            wait_seconds: None,
        };
        assert_eq!(code(AskParams::parse_simple(&none)), "options_count");
    }

    #[test]
    fn answers_are_keyed_by_question_and_multi_select_is_comma_joined() {
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
        assert_eq!(answers["Regions?"], "EU, APAC");
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
