//! Validation of `ask_user` and `ask` input: every limit has a stable code,
//! and a refused question is named by its place and text.

use super::input::{
    AskInput, AskOption, AskUserInput, Question, SimpleItem, SimpleKind, SimpleOption,
};
use super::*;
use crate::error::Error;
use crate::widgets::engine::kind::check_wait;
use crate::widgets::engine::text::quoted;

fn len_between(text: &str, min: usize, max: usize, code: &'static str, what: &str) -> Result<()> {
    let len = text.trim().chars().count();
    if len < min || text.chars().count() > max {
        return Err(Error::invalid(
            code,
            format!("{what} needs {min} to {max} characters; it has {len}"),
        ));
    }
    Ok(())
}

fn check_labels<'a>(labels: impl Iterator<Item = &'a str>, question: &str) -> Result<()> {
    let mut seen = std::collections::BTreeSet::new();
    for label in labels {
        if label.trim().is_empty() {
            return Err(Error::invalid(
                "empty_label",
                format!("an option of {} has an empty label", quoted(question)),
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
            return Err(Error::invalid(
                "duplicate_label",
                format!(
                    "{} offers the label {} twice",
                    quoted(question),
                    quoted(label)
                ),
            ));
        }
    }
    Ok(())
}

/// Prefixes a validation error with the question it is about, so an agent
/// asking several knows which one to fix.
pub(super) fn about(n: usize, question: &str) -> impl Fn(Error) -> Error + '_ {
    move |err| match err {
        Error::Invalid { code, message } if question.is_empty() => Error::Invalid {
            code,
            message: format!("question {}: {message}", n + 1),
        },
        Error::Invalid { code, message } => Error::Invalid {
            code,
            message: format!("question {} ({}): {message}", n + 1, quoted(question)),
        },
        other => other,
    }
}

fn check_option_value(option: &AskOption) -> Result<()> {
    match &option.value {
        Some(v) => len_between(v, 1, MAX_VALUE_CHARS, "invalid_value", "an option value"),
        None => Ok(()),
    }
}

fn check_question(q: &Question) -> Result<()> {
    len_between(&q.header, 1, MAX_HEADER_CHARS, "invalid_header", "a header")?;
    if !(2..=4).contains(&q.options.len()) {
        return Err(Error::invalid(
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

/// Questions must differ: answers are keyed by their text. The refusal
/// names them by number: they are not checked for hidden characters yet,
/// and an error never shows those.
fn check_unique<'a>(questions: impl Iterator<Item = &'a str>) -> Result<()> {
    let mut seen = std::collections::BTreeMap::new();
    for (n, q) in questions.enumerate() {
        if let Some(first) = seen.insert(q.trim(), n) {
            return Err(Error::invalid(
                "duplicate_question",
                format!(
                    "questions {} and {} are the same question; ask each once",
                    first + 1,
                    n + 1
                ),
            ));
        }
    }
    Ok(())
}

/// One simple widget of `ask`, validated.
fn simple_question(item: &SimpleItem) -> Result<Question> {
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
            return Err(Error::invalid(
                "options_count",
                "give the `options` to choose from",
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
        return Err(Error::invalid(
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
        return Err(Error::invalid(
            "invalid_default",
            "`default` must be one of the option labels",
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
    pub fn parse(input: &AskUserInput) -> Result<Self> {
        if input.question.is_some() || input.options.is_some() || input.allow_freeform.is_some() {
            return Self::parse_wick(input);
        }
        if input.agent_name.is_some() {
            return Err(Error::invalid(
                "ambiguous_ask",
                "`agent_name` goes with one `question` (wick's `ask_user`), not with `questions`",
            ));
        }
        let count = input.questions.len();
        if count == 0 || count > MAX_QUESTIONS {
            return Err(Error::invalid(
                "questions_count",
                format!("ask 1 to {MAX_QUESTIONS} questions; there are {count}"),
            ));
        }
        for (n, q) in input.questions.iter().enumerate() {
            if q.kind.is_some() || q.default.is_some() || q.allow_freeform.is_some() {
                return Err(Error::BadRequest {
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
            agent_name: None,
        })
    }

    /// Validates wick's `ask_user`: one `question` with `options`
    /// (`{label, value}` or labels), `allow_freeform` and `agent_name`,
    /// shown as radio buttons (and a typed answer where allowed).
    fn parse_wick(input: &AskUserInput) -> Result<Self> {
        // `normalise` gave wick's call an empty `questions`.
        if !input.questions.is_empty() {
            return Err(Error::invalid(
                "ambiguous_ask",
                "give either `questions` or one `question` with `options`, not both",
            ));
        }
        let item = SimpleItem {
            question: input.question.clone(),
            label: None,
            widget: Some(SimpleKind::Radio),
            options: input.options.clone(),
            default: None,
            allow_freeform: input.allow_freeform.unwrap_or(false),
        };
        let mut params = Self::parse_simple(&AskInput {
            items: Some(vec![item]),
            ..AskInput::default()
        })?;
        if let Some(name) = &input.agent_name {
            let one_line = !name.chars().any(char::is_control);
            if name.trim().is_empty() || name.chars().count() > MAX_AGENT_NAME_CHARS || !one_line {
                return Err(Error::invalid(
                    "invalid_agent_name",
                    format!("`agent_name` is 1 to {MAX_AGENT_NAME_CHARS} characters on one line"),
                ));
            }
            params.agent_name = Some(name.trim().to_owned());
        }
        check_wait(input.wait_seconds)?;
        Ok(params)
    }

    /// Validates `ask` input: one simple widget, or several in one form.
    pub fn parse_simple(input: &AskInput) -> Result<Self> {
        let items = input.simple_items()?;
        if items.is_empty() || items.len() > MAX_SIMPLE_ITEMS {
            return Err(Error::invalid(
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
            agent_name: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::widgets::kinds::ask::question;

    fn code(result: Result<AskParams>) -> &'static str {
        match result {
            Err(Error::Invalid { code, .. }) => code,
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[test]
    fn ask_user_limits_have_codes() {
        let ok = AskUserInput {
            questions: vec![question("Which DB?", &["Postgres", "SQLite"], false)],
            ..AskUserInput::default()
        };
        assert!(AskParams::parse(&ok).is_ok());
        let with = |qs: Vec<Question>, wait: Option<u64>| {
            AskParams::parse(&AskUserInput {
                questions: qs,
                wait_seconds: wait,
                ..AskUserInput::default()
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
            Err(Error::Invalid { code, message }) => {
                assert_eq!(code, "options_count");
                assert!(message.starts_with("question 2 (\"Region?\")"), "{message}");
            }
            other => panic!("expected options_count, got {other:?}"),
        }
    }
}
