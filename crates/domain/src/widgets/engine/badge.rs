//! The words of a widget's badge: how the transcript, the pages and
//! Slack say that a widget ended, who answered it and when. The server
//! draws them (its `cards` module); Slack's messages write them.

use serde_json::Value;

use super::row::WidgetStatus;

/// The `answered_by` of an answer given by the agent's MCP client (form
/// mode); its audit rows' actor is `mcp-client:SESSION`.
pub const MCP_CLIENT: &str = "mcp-client";

/// The `answered_by` of an answer given in an MCP App in the agent's
/// client; its audit rows' actor is `mcp-app:SESSION`.
pub const MCP_APP: &str = "mcp-app";

/// A resolved widget's badge.
pub struct Badge {
    pub class: &'static str,
    /// The name of its icon (`crate::icons::svg`).
    pub icon: &'static str,
    /// The words, with the time the widget ended as `at {when}`.
    pub text: String,
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
        MCP_CLIENT => "the agent's MCP client (form mode)".to_owned(),
        MCP_APP => "the agent's client (MCP App)".to_owned(),
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
        // Withdrawn by its agent (`crate::widgets::engine::life`): the reason, and
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
