//! The clarification card (`templates/widgets/clarification.html`): the
//! question, the type's part (`templates/widgets/clarification/TYPE.html`),
//! the free-text box that is always there, and once answered, both parts
//! of the answer.

mod annotation;
mod choice;
mod curation;
mod mapping;
mod ranking;
mod table;
mod tree;

use askama::Template;
use serde_json::Value;
use widgetd_domain::Error;
use widgetd_domain::widgets::WidgetStatus;
use widgetd_domain::widgets::kinds::clarification::annotation::Annotation;
use widgetd_domain::widgets::kinds::clarification::mapping::Mapping;
use widgetd_domain::widgets::kinds::clarification::tree::Tree;
use widgetd_domain::widgets::kinds::clarification::types::stored;
use widgetd_domain::widgets::kinds::clarification::{
    Choice, ClarificationParams, ClarificationType, Curation, MAX_FREEFORM_CHARS, Ranking, Table,
};

use crate::cards::{self, Card};
use widgetd_domain::Result;

/// What the card shows of the widget.
pub enum Mode<'a> {
    /// The form controls, for a person who may answer a pending widget.
    Form,
    /// A read-only view of a pending widget, for one who may only watch.
    Waiting,
    /// The answer, `structured` as stored.
    Answered(&'a Value),
}

/// Where a type renders its part.
pub struct Part<'a> {
    /// The widget id: element ids start `w-{id}-`.
    pub id: &'a str,
    pub mode: Mode<'a>,
}

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
pub(super) fn render(params: &ClarificationParams, card: &Card<'_>) -> Result<String> {
    let Ok((ty, widget)) = params.stored_type() else {
        return cards::unsupported(card);
    };
    let mode = match (card.status, card.result) {
        (WidgetStatus::Submitted, Some(result)) => Mode::Answered(&result["structured"]),
        (WidgetStatus::Pending, _) if card.can_answer => Mode::Form,
        _ => Mode::Waiting,
    };
    let part = render_part(ty.name(), &widget, &Part { id: card.id, mode })?;
    let freeform = card
        .result
        .and_then(|r| r["freeform"].as_str())
        .filter(|f| !f.is_empty())
        .map(str::to_owned);
    cards::render(&ClarificationCard {
        card,
        question: &params.question,
        ty: ty.name(),
        part,
        freeform,
        max_freeform: MAX_FREEFORM_CHARS,
    })
}

/// The part of a widget of type `name`, drawn by the type's own template
/// (`templates/widgets/clarification/TYPE.html`): form controls, a
/// read-only view, or the answer (see [`Mode`]).
fn render_part(name: &str, params: &Value, part: &Part<'_>) -> Result<String> {
    type Draw<T> = fn(&<T as ClarificationType>::Params, &Part<'_>) -> Result<String>;
    fn with<T: ClarificationType>(
        params: &Value,
        part: &Part<'_>,
        draw: Draw<T>,
    ) -> Result<String> {
        draw(&stored::<T>(params)?, part)
    }
    match name {
        _ if name == Choice::TYPE => with::<Choice>(params, part, choice::render),
        _ if name == Table::TYPE => with::<Table>(params, part, table::render),
        _ if name == Mapping::TYPE => with::<Mapping>(params, part, mapping::render),
        _ if name == Ranking::TYPE => with::<Ranking>(params, part, ranking::render),
        _ if name == Curation::TYPE => with::<Curation>(params, part, curation::render),
        _ if name == Tree::TYPE => with::<Tree>(params, part, tree::render),
        _ if name == Annotation::TYPE => with::<Annotation>(params, part, annotation::render),
        _ => Err(Error::Internal(anyhow::anyhow!(
            "no card for clarification type `{name}`"
        ))),
    }
}
