//! The question card (`templates/widgets/ask.html`): each question with its
//! options as radio buttons, check boxes, a drop-down list or buttons, and
//! once answered, each question with its answer.

use askama::Template;
use serde_json::Value;

use super::markdown;
use crate::cards::{self, Card};
use widgetd_domain::Result;
use widgetd_domain::widgets::kinds::ask::{AskParams, SimpleKind};

/// One choice of a question as shown.
struct OptionView {
    label: String,
    description: Option<String>,
    preview_html: Option<String>,
    input_id: String,
    checked: bool,
}

/// One question as shown.
struct QuestionView {
    index: usize,
    question: String,
    header: String,
    multi: bool,
    options: Vec<OptionView>,
    other_id: String,
    /// Answered with a drop-down list.
    select: bool,
    /// A free-text answer is offered ("Other").
    other: bool,
}

/// The widget as shown.
struct AskView {
    questions: Vec<QuestionView>,
    /// Answered by clicking one of the option buttons.
    buttons: bool,
    /// Question and answer, once answered.
    answers: Vec<(String, String)>,
    /// The agent's own name, when it gave one (wick's `agent_name`).
    agent_name: Option<String>,
}

#[derive(Template)]
#[template(path = "widgets/ask.html")]
struct AskCard<'a> {
    card: &'a Card<'a>,
    ask: AskView,
}

/// An answer as shown: a typed or single answer as it is, several
/// comma-joined (older rows stored them joined already).
fn answer_text(answer: &Value) -> String {
    match answer {
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().unwrap_or_default())
            .collect::<Vec<_>>()
            .join(", "),
        other => other.as_str().unwrap_or_default().to_owned(),
    }
}

fn questions(params: &AskParams, id: &str) -> Vec<QuestionView> {
    params
        .questions
        .iter()
        .enumerate()
        .map(|(index, q)| QuestionView {
            index,
            question: q.question.clone(),
            header: q.header.clone(),
            multi: q.multi_select,
            select: params.kind_of(q) == Some(SimpleKind::Select),
            other: params.freeform(q),
            options: q
                .options
                .iter()
                .enumerate()
                .map(|(n, o)| OptionView {
                    label: o.label.clone(),
                    description: o.description.clone(),
                    preview_html: o.preview_markdown.as_deref().map(markdown::render),
                    input_id: format!("w-{id}-q{index}-o{n}"),
                    checked: params.default_of(q) == Some(o.label.as_str()),
                })
                .collect(),
            other_id: format!("w-{id}-q{index}-other"),
        })
        .collect()
}

/// The inside of a question card.
pub(super) fn render(params: &AskParams, card: &Card<'_>) -> Result<String> {
    let answers = card
        .result
        .and_then(|r| r["answers"].as_object())
        .map(|m| m.iter().map(|(q, a)| (q.clone(), answer_text(a))).collect())
        .unwrap_or_default();
    let ask = AskView {
        questions: questions(params, card.id),
        buttons: params.answered_by_button(),
        answers,
        agent_name: params.agent_name.clone(),
    };
    cards::render(&AskCard { card, ask })
}
