//! What every widget card shares: the context a kind renders its card in,
//! the badges of widgets that ended, refused answers shown in the form, and
//! the "Unsupported widget" card. The transcript page puts each card in its
//! `<section>` (`templates/widget.html`); a kind's template
//! (`templates/widgets/KIND.html`) draws what is inside, using the shared
//! partials `widgets/error.html`, `widgets/badge.html` and
//! `widgets/dismiss.html`.

use std::collections::BTreeSet;

use askama::Template;
use serde_json::Value;

use super::{WidgetRow, WidgetStatus, kind};
use crate::clock;
use crate::error::{AppError, AppResult};

/// A resolved widget's badge.
pub struct Badge {
    pub class: &'static str,
    /// The name of its icon (`crate::icons::svg`).
    pub icon: &'static str,
    /// The words, with the time the widget ended as `at {when}`.
    pub text: String,
}

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

/// Who `key` of a result names, or "someone"; an answer of the agent's
/// MCP client says so (see [`shown_answerer`]).
pub fn who(result: &Value, key: &str) -> String {
    shown_answerer(result[key].as_str().unwrap_or("someone"))
}

/// How the transcript names who answered: the person's name, or "the
/// agent's MCP client (form mode)" for its `answered_by` of `mcp-client`,
/// "the agent's client (MCP App)" for `mcp-app`.
pub fn shown_answerer(by: &str) -> String {
    match by {
        super::kind::MCP_CLIENT => "the agent's MCP client (form mode)".to_owned(),
        super::kind::MCP_APP => "the agent's client (MCP App)".to_owned(),
        name => name.to_owned(),
    }
}

/// The badge of an answered question: "Answered by alice at …".
pub fn answered_by(result: &Value, when: &str) -> Badge {
    Badge {
        class: "submitted",
        icon: "check-circle",
        text: format!("Answered by {} at {when}", who(result, "answered_by")),
    }
}

/// The badge of a widget that ended without an answer, the same for every
/// kind: `subject` is what the kind calls it ("Question").
pub fn ended_badge(subject: &str, status: WidgetStatus, result: &Value, when: &str) -> Badge {
    let (class, icon, text) = match status {
        WidgetStatus::Dismissed => {
            let note = result["note"]
                .as_str()
                .map(|n| format!(": {n}"))
                .unwrap_or_default();
            let by = who(result, "dismissed_by");
            (
                "dismissed",
                "ban",
                format!("{subject} dismissed by {by} at {when}{note}"),
            )
        }
        WidgetStatus::Expired => {
            // Ended by the caller that waited for it, not by the TTL.
            let text = match result["ended_because"].as_str() {
                Some(why) => format!("{subject} expired at {when}: {why}"),
                None => format!("{subject} expired at {when}; nothing was given"),
            };
            ("expired", "clock", text)
        }
        // Withdrawn by its agent (`crate::widgets::life`): the reason, and
        // the link to what replaced it, stand under the card.
        _ if result["withdrawn_by"].is_string() => {
            let verb = match result["replaced_by"].is_string() {
                true => "replaced",
                false => "withdrawn",
            };
            (
                "cancelled",
                "x",
                format!("{subject} {verb} by the agent at {when}; nothing was given"),
            )
        }
        _ => (
            "cancelled",
            "x",
            format!("{subject} cancelled (session archived); nothing was given"),
        ),
    };
    Badge { class, icon, text }
}

/// Renders a kind's template; a failure (which askama only reports for a
/// broken formatter) is an internal error.
pub fn render(template: &impl Template) -> AppResult<String> {
    template
        .render()
        .map_err(|e| AppError::Internal(anyhow::anyhow!("a widget card failed to render: {e}")))
}

#[derive(Template)]
#[template(path = "widgets/unsupported.html")]
struct Unsupported<'a> {
    card: &'a Card<'a>,
}

/// The card of a widget this version cannot show.
pub fn unsupported(card: &Card<'_>) -> AppResult<String> {
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
) -> AppResult<String> {
    let loaded = kind::load_or_lapsed(&widget.kind, &widget.params);
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
    loaded.render(&card)
}
