//! What the pages show, built from stored rows: transcript messages, and
//! widget cards drawn by their kinds (`widgetd_domain::widgets::card`). Nothing here
//! ever holds a value.

use crate::cards::{FormError, Viewer};
use crate::error::WebResult;
use widgetd_domain::clock;
use widgetd_domain::transcript::Message;
use widgetd_domain::widgets::{WidgetRow, WidgetStatus};

pub use crate::cards::Vault;

/// Any widget in the transcript: its `<section>` attributes and, drawn by
/// its kind, what is inside.
pub struct WidgetCard {
    pub id: String,
    pub kind: String,
    pub status: &'static str,
    pub body: String,
    /// When the agent asked.
    pub asked: clock::Stamp,
    /// Who ended it, how, and when: the person's turn in the conversation.
    pub answer: Option<Answer>,
    /// Withdrawn by its agent: why, and what replaced it.
    pub withdrawn: Option<widgetd_domain::widgets::engine::life::Withdrawn>,
}

/// A person's answer to a widget, as a line of the conversation.
pub struct Answer {
    pub who: String,
    /// "answered", "approved", "denied", "dismissed".
    pub verb: &'static str,
    pub when: clock::Stamp,
}

/// The SVG of the icon `name` (`crate::icons`), for the templates.
pub fn icon(name: &str) -> &'static str {
    crate::icons::svg(name)
}

/// The person who ended `widget`, if a person did.
fn answer_of(widget: &WidgetRow) -> Option<Answer> {
    let result: serde_json::Value = serde_json::from_str(widget.result.as_deref()?).ok()?;
    let when = clock::Stamp::from_ms(widget.resolved_at?);
    let by = |key: &str| {
        result[key]
            .as_str()
            .map(widgetd_domain::widgets::engine::badge::shown_answerer)
    };
    let (who, verb) = match widget.status {
        WidgetStatus::Dismissed => (by("dismissed_by")?, "dismissed"),
        WidgetStatus::Submitted => {
            let verb = match result["decision"].as_str() {
                Some("deny") => "denied",
                Some(_) => "approved",
                None => "answered",
            };
            (by("answered_by").or_else(|| by("submitted_by"))?, verb)
        }
        _ => return None,
    };
    Some(Answer { who, verb, when })
}

/// A text message of the transcript.
pub struct TextEntry {
    pub id: i64,
    pub role: String,
    /// Who speaks: the person's name, "Agent" or "System".
    pub speaker: String,
    /// The person who wrote a reply.
    pub author: Option<String>,
    pub body: String,
    pub time: clock::Stamp,
}

/// One transcript entry.
pub enum Entry {
    Text(TextEntry),
    Widget(Box<WidgetCard>),
}

/// The card of `widget`; `error` is a refused answer to show in its form.
pub fn widget_card(
    widget: &WidgetRow,
    viewer: &Viewer<'_>,
    error: Option<&FormError>,
) -> WebResult<WidgetCard> {
    Ok(WidgetCard {
        id: widget.id.to_string(),
        kind: widget.kind.clone(),
        status: widget.status.as_str(),
        body: crate::cards::render_widget(widget, viewer, error)?,
        asked: clock::Stamp::from_ms(widget.created_at),
        answer: answer_of(widget),
        withdrawn: widgetd_domain::widgets::engine::life::withdrawn(widget),
    })
}

/// The transcript in order: messages, and widgets where their message stands.
pub fn entries(
    messages: Vec<Message>,
    widgets: Vec<WidgetRow>,
    viewer: &Viewer<'_>,
    error: Option<(&str, &FormError)>,
) -> WebResult<Vec<Entry>> {
    let mut widgets: std::collections::HashMap<String, WidgetRow> =
        widgets.into_iter().map(|w| (w.id.to_string(), w)).collect();
    let mut entries = Vec::with_capacity(messages.len());
    for m in messages {
        match m.widget_id {
            Some(id) => {
                let Some(w) = widgets.remove(&id) else {
                    continue;
                };
                let err = error.filter(|(wid, _)| *wid == id).map(|(_, e)| e);
                entries.push(Entry::Widget(Box::new(widget_card(&w, viewer, err)?)));
            }
            None => entries.push(Entry::Text(TextEntry {
                id: m.id,
                role: format!("{:?}", m.role).to_lowercase(),
                speaker: m.author.clone().unwrap_or_else(|| format!("{:?}", m.role)),
                author: m.author,
                body: m.body.unwrap_or_default(),
                time: clock::Stamp::from_ms(m.created_at),
            })),
        }
    }
    Ok(entries)
}
