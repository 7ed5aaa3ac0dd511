//! Widget cards: what every card shares (the context a kind renders its
//! card in, the badge, refused answers shown in the form, the "Unsupported
//! widget" card) and each kind's card, drawn from its params as the domain
//! loaded them. The transcript page puts each card in its
//! `<section>` (`templates/widget.html`); a kind's template
//! (`templates/widgets/KIND.html`) draws what is inside, using the shared
//! partials `widgets/error.html`, `widgets/badge.html` and
//! `widgets/dismiss.html`.

use std::collections::BTreeSet;

use askama::Template;
use serde_json::Value;

use widgetd_domain::widgets::engine::badge::Badge;
use widgetd_domain::widgets::engine::kind::Loaded;
use widgetd_domain::widgets::{WidgetRow, WidgetStatus};
use widgetd_domain::{Error, clock};

use widgetd_domain::Result;

mod approval;
mod ask;
pub mod clarification;
mod env_vars;
mod fields;
pub mod markdown;

/// A refused answer, shown in the widget's form.
pub struct FormError {
    pub code: String,
    pub message: String,
}

/// Whose vault a session's answers go to, and which global names it holds.
pub struct Vault {
    pub owner: String,
    pub saved_globals: BTreeSet<String>,
}

/// What a kind renders its card with.
pub struct Card<'a> {
    /// The widget id (form actions, element ids).
    pub id: &'a str,
    /// Its `widgets.kind`.
    pub kind: &'a str,
    pub status: WidgetStatus,
    /// The result once the widget left `pending`.
    pub result: Option<&'a Value>,
    /// Set exactly when the widget is no longer pending.
    pub badge: Option<Badge>,
    /// A refused answer to show in the form.
    pub error: Option<&'a FormError>,
    /// The viewer's form token.
    pub csrf: &'a str,
    /// The viewer may submit and dismiss.
    pub can_answer: bool,
    pub vault: &'a Vault,
    /// Drawn on its own page (`GET /widgets/{id}`): its forms come back
    /// there, not to the transcript.
    pub standalone: bool,
    /// When the widget ended: `when` in the badge's words.
    pub resolved: Option<clock::Stamp>,
}

impl Card<'_> {
    /// The badge as HTML: its icon, its words, and the time it ended as a
    /// `<time>` element (a relative time in the browser).
    pub fn badge_html(&self) -> String {
        let Some(badge) = &self.badge else {
            return String::new();
        };
        let icon = crate::icons::svg(badge.icon);
        let at = self.resolved.as_ref().and_then(|stamp| {
            let needle = format!(" at {}", stamp.text);
            badge.text.find(&needle).map(|i| (i, needle.len(), stamp))
        });
        match at {
            Some((i, len, stamp)) => format!(
                r#"{icon} {} <time datetime="{}" title="{}">at {}</time>{}"#,
                crate::icons::escape(&badge.text[..i]),
                stamp.iso,
                stamp.text,
                stamp.text,
                crate::icons::escape(&badge.text[i + len..]),
            ),
            None => format!("{icon} {}", crate::icons::escape(&badge.text)),
        }
    }

    /// The message of the refused answer, if any.
    pub fn error_message(&self) -> Option<&str> {
        self.error.map(|e| e.message.as_str())
    }
}

/// Renders a kind's template; a failure (which askama only reports for a
/// broken formatter) is an internal error.
pub fn render(template: &impl Template) -> Result<String> {
    template
        .render()
        .map_err(|e| Error::Internal(anyhow::anyhow!("a widget card failed to render: {e}")))
}

#[derive(Template)]
#[template(path = "widgets/unsupported.html")]
struct Unsupported<'a> {
    card: &'a Card<'a>,
}

/// The card of a widget this version cannot show.
pub fn unsupported(card: &Card<'_>) -> Result<String> {
    render(&Unsupported { card })
}

/// Who looks at a card, and what they may do with it.
pub struct Viewer<'a> {
    /// Their form token.
    pub csrf: &'a str,
    /// They may submit and dismiss.
    pub can_answer: bool,
    /// The vault the session's answers go to.
    pub vault: &'a Vault,
    /// The card is alone on its page, not in the transcript.
    pub standalone: bool,
}

/// The inside of `widget`'s card as `viewer` sees it, drawn by its kind;
/// `error` is a refused answer to show in its form.
pub fn render_widget(
    widget: &WidgetRow,
    viewer: &Viewer<'_>,
    error: Option<&FormError>,
) -> Result<String> {
    let loaded = widgetd_domain::widgets::kinds::load_or_lapsed(&widget.kind, &widget.params);
    let result: Option<Value> = widget
        .result
        .as_deref()
        .and_then(|r| serde_json::from_str(r).ok());
    let resolved = widget.resolved_at.map(clock::Stamp::from_ms);
    let when = resolved
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default();
    let badge = loaded.badge(
        widget.status,
        result.as_ref().unwrap_or(&Value::Null),
        &when,
    );
    let card = Card {
        id: widget.id.as_str(),
        kind: &widget.kind,
        status: widget.status,
        result: result.as_ref(),
        badge,
        error,
        csrf: viewer.csrf,
        can_answer: viewer.can_answer,
        vault: viewer.vault,
        standalone: viewer.standalone,
        resolved,
    };
    draw(loaded.as_ref(), &card)
}

/// The inside of a card, drawn by the kind whose params `loaded` holds;
/// the "Unsupported widget" card for a widget that cannot be read.
fn draw(loaded: &dyn Loaded, card: &Card<'_>) -> Result<String> {
    let params = loaded.params();
    if let Some(params) = params.downcast_ref() {
        env_vars::render(params, card)
    } else if let Some(params) = params.downcast_ref() {
        ask::render(params, card)
    } else if let Some(params) = params.downcast_ref() {
        approval::render(params, card)
    } else if let Some(params) = params.downcast_ref() {
        clarification::render(params, card)
    } else if let Some(params) = params.downcast_ref() {
        fields::render(params, card)
    } else {
        unsupported(card)
    }
}
