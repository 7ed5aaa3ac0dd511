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
const MAX_SIMPLE_ITEMS: usize = 6;
const MAX_ITEM_LABEL_CHARS: usize = 40;
const MAX_VALUE_CHARS: usize = 200;
const MAX_OTHER_CHARS: usize = 2000;
/// Longest a caller may wait for the answer.
pub const MAX_WAIT_SECS: u64 = 300;

/// One choice of a question.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskOption {
    /// What the person sees (1 to 80 characters).
    pub label: String,
    /// What the agent receives when this is picked (1 to 200 characters);
    /// the label when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// What choosing it means (at most 300 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Optional markdown shown as a preview of this choice (at most 4000 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_markdown: Option<String>,
}

impl AskOption {
    fn plain(label: String, value: Option<String>) -> Self {
        Self {
            label,
            value,
            description: None,
            preview_markdown: None,
        }
    }

    /// The answer the agent receives for this choice.
    pub fn answer(&self) -> &str {
        self.value.as_deref().unwrap_or(&self.label)
    }
}

/// One question of `ask_user`, or one simple widget of `ask`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// The full question (1 to 500 characters); answers are keyed by it.
    pub question: String,
    /// A short chip shown above it, e.g. "Database" (1 to 12 characters).
    pub header: String,
    /// 2 to 4 choices; a free-text "Other" answer is always offered too.
    pub options: Vec<AskOption>,
    /// Whether several choices may be picked (answered as an array).
    #[serde(default)]
    pub multi_select: bool,
    /// Set for the simple widgets of `ask`: how the question is shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub kind: Option<SimpleKind>,
    /// A preselected choice (its label), for the simple widgets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub default: Option<String>,
    /// Whether a free-text answer is offered; `ask_user` always offers one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub allow_freeform: Option<bool>,
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
    /// Check boxes: several may be picked, answered as an array.
    Checkbox,
}

/// A choice of a simple widget: a label (which is also the answer), or a
/// label with the `value` the agent receives instead.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SimpleOption {
    Label(String),
    Labelled(LabelledOption),
}

/// A choice whose answer differs from what the person sees.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LabelledOption {
    /// What the person sees (1 to 80 characters).
    pub label: String,
    /// What the agent receives (1 to 200 characters).
    pub value: String,
}

/// One simple widget: in `ask` itself, or one of its `items`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimpleItem {
    /// The question (1 to 500 characters).
    #[serde(default)]
    pub question: Option<String>,
    /// A short label shown above it in a form of several items (at most 40 characters).
    #[serde(default)]
    pub label: Option<String>,
    /// `confirm` (default), `buttons`, `select`, `radio` or `checkbox`.
    #[serde(default)]
    pub widget: Option<SimpleKind>,
    /// The choices (2 to 10): labels, or `{label, value}`; `confirm` defaults to Yes / No.
    #[serde(default)]
    pub options: Option<Vec<SimpleOption>>,
    /// A preselected choice (its label); must be one of the options.
    #[serde(default)]
    pub default: Option<String>,
    /// Offer a free-text answer besides the options (default false).
    #[serde(default)]
    pub allow_freeform: bool,
}

/// The arguments of `ask`: one simple question, or several (`items`)
/// answered in one form.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskInput {
    /// The question (1 to 500 characters); leave out when giving `items`.
    #[serde(default)]
    pub question: Option<String>,
    /// `confirm` (default), `buttons`, `select`, `radio` or `checkbox`.
    #[serde(default)]
    pub widget: Option<SimpleKind>,
    /// The choices (2 to 10): labels, or `{label, value}`; `confirm` defaults to Yes / No.
    #[serde(default)]
    pub options: Option<Vec<SimpleOption>>,
    /// A preselected choice (its label); must be one of the options.
    #[serde(default)]
    pub default: Option<String>,
    /// Offer a free-text answer besides the options (default false).
    #[serde(default)]
    pub allow_freeform: bool,
    /// Instead of `question`: 1 to 6 simple widgets answered together in
    /// one form, each with its own `label`.
    #[serde(default)]
    pub items: Option<Vec<SimpleItem>>,
    /// As for `ask_user`.
    #[serde(default)]
    pub wait_seconds: Option<u64>,
}

impl AskInput {
    /// The widgets asked: `items`, or the one given at the top level.
    fn simple_items(&self) -> AppResult<Vec<SimpleItem>> {
        let top_level = self.question.is_some()
            || self.widget.is_some()
            || self.options.is_some()
            || self.default.is_some()
            || self.allow_freeform;
        match (&self.items, top_level) {
            (Some(_), true) => Err(invalid(
                "ambiguous_ask",
                "give either `question` (with `widget`, `options`, …) or `items`, not both".into(),
            )),
            (Some(items), false) => Ok(items.clone()),
            (None, _) => Ok(vec![SimpleItem {
                question: self.question.clone(),
                label: None,
                widget: self.widget,
                options: self.options.clone(),
                default: self.default.clone(),
                allow_freeform: self.allow_freeform,
            }]),
        }
    }
}

/// A validated question widget, as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AskParams {
    pub questions: Vec<Question>,
    /// Rows written before simple widgets kept their kind per question
    /// carry it here, for their one question.
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

/// Prefixes a validation error with the question it is about, so an agent
/// asking several knows which one to fix.
fn about(n: usize, question: &str) -> impl Fn(AppError) -> AppError + '_ {
    move |err| match err {
        AppError::Invalid { code, message } if question.is_empty() => AppError::Invalid {
            code,
            message: format!("question {}: {message}", n + 1),
        },
        AppError::Invalid { code, message } => AppError::Invalid {
            code,
            message: format!("question {} (\"{question}\"): {message}", n + 1),
        },
        other => other,
    }
}

fn check_option_value(option: &AskOption) -> AppResult<()> {
    match &option.value {
        Some(v) => len_between(v, 1, MAX_VALUE_CHARS, "invalid_value", "an option value"),
        None => Ok(()),
    }
}

fn check_question(q: &Question) -> AppResult<()> {
    len_between(&q.header, 1, MAX_HEADER_CHARS, "invalid_header", "a header")?;
    if !(2..=4).contains(&q.options.len()) {
        return Err(invalid(
            "options_count",
            format!("needs 2 to 4 options; it has {}", q.options.len()),
        ));
    }
    check_labels(q.options.iter().map(|o| o.label.as_str()), &q.question)?;
    for o in &q.options {
        check_option_value(o)?;
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
    Ok(())
}

/// Questions must differ: answers are keyed by their text.
fn check_unique<'a>(questions: impl Iterator<Item = &'a str>) -> AppResult<()> {
    let mut seen = std::collections::BTreeSet::new();
    for q in questions {
        if !seen.insert(q.trim()) {
            return Err(invalid(
                "duplicate_question",
                format!("\"{q}\" is asked twice"),
            ));
        }
    }
    Ok(())
}

/// One simple widget of `ask`, validated.
fn simple_question(item: &SimpleItem) -> AppResult<Question> {
    let kind = item.widget.unwrap_or_default();
    let question = item.question.clone().unwrap_or_default();
    len_between(
        &question,
        1,
        MAX_QUESTION_CHARS,
        "invalid_question",
        "the question",
    )?;
    let header = item.label.clone().unwrap_or_default();
    len_between(
        &header,
        0,
        MAX_ITEM_LABEL_CHARS,
        "invalid_label",
        "an item label",
    )?;
    let options: Vec<AskOption> = match (&item.options, kind) {
        (None, SimpleKind::Confirm) => ["Yes", "No"]
            .map(|l| AskOption::plain(l.to_owned(), None))
            .into(),
        (None, _) => {
            return Err(invalid(
                "options_count",
                "give the `options` to choose from".into(),
            ));
        }
        (Some(options), _) => options
            .iter()
            .map(|o| match o {
                SimpleOption::Label(label) => AskOption::plain(label.clone(), None),
                SimpleOption::Labelled(o) => {
                    AskOption::plain(o.label.clone(), Some(o.value.clone()))
                }
            })
            .collect(),
    };
    if !(2..=MAX_SIMPLE_OPTIONS).contains(&options.len()) {
        return Err(invalid(
            "options_count",
            format!(
                "give 2 to {MAX_SIMPLE_OPTIONS} options; there are {}",
                options.len()
            ),
        ));
    }
    check_labels(options.iter().map(|o| o.label.as_str()), &question)?;
    for o in &options {
        check_option_value(o)?;
    }
    if let Some(default) = &item.default
        && !options.iter().any(|o| o.label == *default)
    {
        return Err(invalid(
            "invalid_default",
            "`default` must be one of the option labels".into(),
        ));
    }
    Ok(Question {
        question,
        header,
        options,
        multi_select: kind == SimpleKind::Checkbox,
        kind: Some(kind),
        default: item.default.clone(),
        allow_freeform: Some(item.allow_freeform),
    })
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
        for (n, q) in input.questions.iter().enumerate() {
            if q.kind.is_some() || q.default.is_some() || q.allow_freeform.is_some() {
                return Err(AppError::BadRequest {
                    code: "invalid_body",
                    message: format!(
                        "unknown field; allowed: `question`, `header`, `options`, `multi_select` (at `questions.{n}`)"
                    ),
                });
            }
            len_between(
                &q.question,
                1,
                MAX_QUESTION_CHARS,
                "invalid_question",
                "a question",
            )
            .map_err(about(n, ""))?;
            check_question(q).map_err(about(n, &q.question))?;
        }
        check_unique(input.questions.iter().map(|q| q.question.as_str()))?;
        check_wait(input.wait_seconds)?;
        Ok(Self {
            questions: input.questions.clone(),
            simple: None,
            default: None,
        })
    }

    /// Validates `ask` input: one simple widget, or several in one form.
    pub fn parse_simple(input: &AskInput) -> AppResult<Self> {
        let items = input.simple_items()?;
        if items.is_empty() || items.len() > MAX_SIMPLE_ITEMS {
            return Err(invalid(
                "questions_count",
                format!(
                    "give 1 to {MAX_SIMPLE_ITEMS} items; there are {}",
                    items.len()
                ),
            ));
        }
        let several = items.len() > 1;
        let mut questions = Vec::new();
        for (n, item) in items.iter().enumerate() {
            let q = simple_question(item);
            let q = if several {
                q.map_err(about(n, item.question.as_deref().unwrap_or_default()))?
            } else {
                q?
            };
            questions.push(q);
        }
        check_unique(questions.iter().map(|q| q.question.as_str()))?;
        check_wait(input.wait_seconds)?;
        Ok(Self {
            questions,
            simple: None,
            default: None,
        })
    }

    /// How `q` is shown: a simple widget's kind, `None` for `ask_user`.
    pub fn kind_of(&self, q: &Question) -> Option<SimpleKind> {
        q.kind.or(self.simple)
    }

    /// The preselected choice of `q`, if any.
    pub fn default_of<'a>(&'a self, q: &'a Question) -> Option<&'a str> {
        q.default.as_deref().or(self.default.as_deref())
    }

    /// Whether `q` takes a typed answer: always for `ask_user`, on request
    /// for simple widgets.
    pub fn freeform(&self, q: &Question) -> bool {
        q.allow_freeform.unwrap_or(self.kind_of(q).is_none())
    }

    /// Whether the form is answered by clicking one button: a single
    /// `confirm` or `buttons` widget without a typed answer.
    pub fn answered_by_button(&self) -> bool {
        match self.questions.as_slice() {
            [q] => {
                matches!(
                    self.kind_of(q),
                    Some(SimpleKind::Buttons | SimpleKind::Confirm)
                ) && !self.freeform(q)
            }
            _ => false,
        }
    }

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

    fn question(q: &str, labels: &[&str], multi: bool) -> Question {
        Question {
            question: q.into(),
            header: "Chip".into(),
            options: labels
                .iter()
                .map(|l| AskOption::plain(l.to_string(), None))
                .collect(),
            multi_select: multi,
            kind: None,
            default: None,
            allow_freeform: None,
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
            question: Some("Deploy?".into()),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(p.kind_of(&p.questions[0]), Some(SimpleKind::Confirm));
        assert_eq!(
            p.questions[0]
                .options
                .iter()
                .map(|o| o.label.as_str())
                .collect::<Vec<_>>(),
            ["Yes", "No"]
        );
        let labels = |l: &[&str]| {
            Some(
                l.iter()
                    .map(|l| SimpleOption::Label(l.to_string()))
                    .collect(),
            )
        };
        let bad = AskInput {
            question: Some("Pick".into()),
            widget: Some(SimpleKind::Radio),
            options: labels(&["a", "b"]),
            default: Some("c".into()),
            ..Default::default()
        };
        assert_eq!(code(AskParams::parse_simple(&bad)), "invalid_default");
        let none = AskInput {
            question: Some("Pick".into()),
            widget: Some(SimpleKind::Select),
            ..Default::default()
        };
        assert_eq!(code(AskParams::parse_simple(&none)), "options_count");
        let both = AskInput {
            question: Some("Pick".into()),
            items: Some(vec![]),
            ..Default::default()
        };
        assert_eq!(code(AskParams::parse_simple(&both)), "ambiguous_ask");
        let second_bad = AskInput {
            items: Some(vec![
                SimpleItem {
                    question: Some("Deploy?".into()),
                    ..Default::default()
                },
                SimpleItem {
                    question: Some("Region?".into()),
                    widget: Some(SimpleKind::Radio),
                    options: labels(&["EU"]),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        };
        match AskParams::parse_simple(&second_bad) {
            Err(AppError::Invalid { code, message }) => {
                assert_eq!(code, "options_count");
                assert!(message.starts_with("question 2 (\"Region?\")"), "{message}");
            }
            other => panic!("expected options_count, got {other:?}"),
        }
    }

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
