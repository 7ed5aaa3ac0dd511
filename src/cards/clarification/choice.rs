//! The card's part of a `choice` widget (`templates/widgets/clarification/choice.html`).

use askama::Template;
use serde_json::Value;
use widgetd_domain::widgets::kinds::clarification::choice::*;

use super::{Mode, Part};
use crate::cards::{self, markdown};
use widgetd_domain::Result;

pub(super) fn render(params: &ChoiceWidget, part: &Part<'_>) -> Result<String> {
    let picked = match part.mode {
        Mode::Answered(structured) => Some(picked_labels(structured)),
        _ => None,
    };
    let options = params
        .options
        .iter()
        .enumerate()
        .map(|(n, o)| OptionView {
            label: o.label.clone(),
            description: o.description.clone(),
            markdown_html: o.markdown.as_deref().map(markdown::render),
            input_id: format!("w-{}-c{n}", part.id),
        })
        .collect();
    cards::render(&ChoicePart {
        form: matches!(part.mode, Mode::Form),
        multi: params.multi_select,
        options,
        picked,
    })
}

/// The labels of an answer, as stored.
fn picked_labels(structured: &Value) -> String {
    let labels: Vec<&str> = structured["selected"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    labels.join(", ")
}

struct OptionView {
    label: String,
    description: Option<String>,
    markdown_html: Option<String>,
    input_id: String,
}

#[derive(Template)]
#[template(path = "widgets/clarification/choice.html")]
struct ChoicePart {
    /// The controls (else a read-only list, or the answer).
    form: bool,
    multi: bool,
    options: Vec<OptionView>,
    /// Once answered: the picked labels, comma-joined.
    picked: Option<String>,
}
