//! What the pages show, built from stored rows: transcript messages, and
//! widget cards drawn by their kinds (`crate::widgets::card`). Nothing here
//! ever holds a value.

use crate::clock;
use crate::error::AppResult;
use crate::transcript::Message;
use crate::widgets::WidgetRow;
use crate::widgets::card::{self, FormError, Viewer};

pub use crate::widgets::card::Vault;

/// Any widget in the transcript: its `<section>` attributes and, drawn by
/// its kind, what is inside.
pub struct WidgetCard {
    pub id: String,
    pub kind: String,
    pub status: &'static str,
    pub body: String,
}

/// A text message of the transcript.
pub struct TextEntry {
    pub id: i64,
    pub role: String,
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
) -> AppResult<WidgetCard> {
    Ok(WidgetCard {
        id: widget.id.to_string(),
        kind: widget.kind.clone(),
        status: widget.status.as_str(),
        body: card::render_widget(widget, viewer, error)?,
    })
}

/// The transcript in order: messages, and widgets where their message stands.
pub fn entries(
    messages: Vec<Message>,
    widgets: Vec<WidgetRow>,
    viewer: &Viewer<'_>,
    error: Option<(&str, &FormError)>,
) -> AppResult<Vec<Entry>> {
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
                author: m.author,
                body: m.body.unwrap_or_default(),
                time: clock::Stamp::from_ms(m.created_at),
            })),
        }
    }
    Ok(entries)
}
