//! The clarification card (`templates/widgets/clarification.html`): the
//! question, the type's part (`templates/widgets/clarification/TYPE.html`),
//! the free-text box that is always there, and once answered, both parts
//! of the answer.

use askama::Template;

use super::types::{Mode, Part};
use super::{ClarificationParams, MAX_FREEFORM_CHARS};
use crate::error::AppResult;
use crate::widgets::WidgetStatus;
use crate::widgets::card::{self, Card};

#[derive(Template)]
#[template(path = "widgets/clarification.html")]
struct ClarificationCard<'a> {
    card: &'a Card<'a>,
    question: &'a str,
    /// The widget's type (a class of the form, for its script and style).
    ty: &'static str,
    /// The type's part, rendered by its own template.
    part: String,
    /// The free-text answer, once given.
    freeform: Option<String>,
    max_freeform: usize,
}

/// The inside of a clarification card; a type this version does not know
/// is shown as an unsupported widget.
pub(super) fn render(params: &ClarificationParams, card: &Card<'_>) -> AppResult<String> {
    let Ok((ty, widget)) = params.stored_type() else {
        return card::unsupported(card);
    };
    let mode = match (card.status, card.result) {
        (WidgetStatus::Submitted, Some(result)) => Mode::Answered(&result["structured"]),
        (WidgetStatus::Pending, _) if card.can_answer => Mode::Form,
        _ => Mode::Waiting,
    };
    let part = ty.render(&widget, &Part { id: card.id, mode })?;
    let freeform = card
        .result
        .and_then(|r| r["freeform"].as_str())
        .filter(|f| !f.is_empty())
        .map(str::to_owned);
    card::render(&ClarificationCard {
        card,
        question: &params.question,
        ty: ty.name(),
        part,
        freeform,
        max_freeform: MAX_FREEFORM_CHARS,
    })
}
