//! What Claude Code expects back from each hook event. Shapes follow
//! Claude Code's hooks reference (see `docs/integrations.md`).

use serde_json::{Value, json};

use widgetd_domain::widgets::WidgetStatus;

/// The hook events widgetd answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    PreToolUse,
    PermissionRequest,
    Notification,
    Stop,
}

impl Event {
    pub fn parse(name: &str) -> widgetd_domain::Result<Self> {
        match name {
            "PreToolUse" => Ok(Self::PreToolUse),
            "PermissionRequest" => Ok(Self::PermissionRequest),
            "Notification" => Ok(Self::Notification),
            "Stop" => Ok(Self::Stop),
            _ => Err(widgetd_domain::Error::invalid(
                "unsupported_hook_event",
                "`hook_event_name` must be PreToolUse, PermissionRequest, Notification or Stop",
            )),
        }
    }

    /// The hook output for a permission `verdict`.
    pub fn answer(self, verdict: &Verdict, wait: u64) -> Value {
        let (decision, reason) = match verdict {
            Verdict::AlwaysAllowed => (
                "allow",
                "Allowed by a standing \"Always\" rule in widgetd.".to_owned(),
            ),
            Verdict::Allowed { by, comment, .. } => (
                "allow",
                match comment {
                    Some(comment) => format!("Allowed in widgetd by {by}: {comment}"),
                    None => format!("Allowed in widgetd by {by}."),
                },
            ),
            Verdict::Denied { by, reason } => (
                "deny",
                match reason {
                    Some(reason) => format!("Denied in widgetd by {by}: {reason}"),
                    None => format!("Denied in widgetd by {by}."),
                },
            ),
            Verdict::Unanswered => (
                "none",
                format!(
                    "No decision in widgetd within {wait} seconds: the request expired and \
                     the call was not run. Ask the user before trying it again."
                ),
            ),
        };
        let mut out = self.permission(decision, &reason);
        if let Verdict::Allowed {
            updated_input: Some(updated),
            ..
        } = verdict
        {
            match self {
                Self::PermissionRequest => {
                    out["hookSpecificOutput"]["decision"]["updatedInput"] = updated.clone();
                }
                _ => out["hookSpecificOutput"]["updatedInput"] = updated.clone(),
            }
        }
        out
    }

    /// The answer to a check that widgetd could not tie to a session: loud,
    /// because Claude Code takes an HTTP error from a hook as "go on". Under
    /// `PreToolUse` the call is denied with what to do; under
    /// `PermissionRequest` Claude Code's own dialog shows, with the same
    /// words above it.
    pub fn unmatched(self, why: &str) -> Value {
        let fix = "Run Claude Code under `widgetd host --session ID` for the session in the \
                   hook's URL (.claude/settings.json), or run `widgetd connect claude-code \
                   --session ID` for the session whose agent token is in WIDGETD_AGENT_TOKEN.";
        if self == Self::PermissionRequest {
            let text = format!("widgetd could not ask the person in the browser: {why} {fix}");
            return json!({ "systemMessage": text });
        }
        let reason = format!(
            "widgetd could not ask the person: {why} Nobody was asked, so this call is denied. {fix}"
        );
        let mut out = self.permission("deny", &reason);
        out["systemMessage"] = json!(reason);
        out
    }

    /// The hook output of a permission `decision` (`allow`, `deny`, or
    /// `none`: no decision).
    fn permission(self, decision: &str, reason: &str) -> Value {
        match self {
            Self::PermissionRequest if decision == "none" => {
                // No decision: Claude Code shows its own permission dialog.
                json!({ "systemMessage": reason })
            }
            Self::PermissionRequest => {
                let mut decision = json!({ "behavior": decision });
                if decision["behavior"] == "deny" {
                    decision["message"] = json!(reason);
                }
                json!({ "hookSpecificOutput": {
                    "hookEventName": "PermissionRequest",
                    "decision": decision,
                }})
            }
            _ => {
                // No decision is a denial: under `-p` Claude Code has no
                // dialog to fall back to, and a call nobody approved never
                // runs.
                let decision = if decision == "none" { "deny" } else { decision };
                json!({ "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": decision,
                    "permissionDecisionReason": reason,
                }})
            }
        }
    }
}

/// What became of a permission check.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    AlwaysAllowed,
    Allowed {
        by: String,
        /// The person's comment, if any.
        comment: Option<String>,
        /// The input as the person edited it, if they did: what runs.
        updated_input: Option<Value>,
    },
    Denied {
        by: String,
        reason: Option<String>,
    },
    /// No decision in time, or the widget was dismissed, expired or
    /// cancelled: never an allow.
    Unanswered,
}

impl Verdict {
    /// From an approval widget's status and result.
    pub fn from_result(status: WidgetStatus, result: Option<&Value>) -> Self {
        let field = |name: &str| {
            result
                .and_then(|r| r.get(name))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        match (status, field("decision").as_deref()) {
            (WidgetStatus::AlreadyPresent, _) => Self::AlwaysAllowed,
            (WidgetStatus::Submitted, Some("once" | "always")) => Self::Allowed {
                by: field("answered_by").unwrap_or_default(),
                comment: field("comment"),
                updated_input: result.and_then(|r| r.get("edited_input")).cloned(),
            },
            (WidgetStatus::Submitted, Some("deny")) => Self::Denied {
                by: field("answered_by").unwrap_or_default(),
                reason: field("reason"),
            },
            _ => Self::Unanswered,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_decision_allows_and_each_event_gets_its_own_shape() {
        let once = json!({ "decision": "once", "answered_by": "alice" });
        let allowed = Verdict::from_result(WidgetStatus::Submitted, Some(&once));
        assert_eq!(
            Event::PermissionRequest.answer(&allowed, 5)["hookSpecificOutput"]["decision"],
            json!({ "behavior": "allow" })
        );
        for status in [
            WidgetStatus::Pending,
            WidgetStatus::Dismissed,
            WidgetStatus::Expired,
        ] {
            let verdict = Verdict::from_result(status, Some(&once));
            assert_eq!(verdict, Verdict::Unanswered);
            let pre = Event::PreToolUse.answer(&verdict, 5);
            assert_eq!(pre["hookSpecificOutput"]["permissionDecision"], "deny");
            let perm = Event::PermissionRequest.answer(&verdict, 5);
            assert!(perm.get("hookSpecificOutput").is_none(), "{perm}");
        }
        let deny = json!({ "decision": "deny", "answered_by": "bob", "reason": "not now" });
        let denied = Verdict::from_result(WidgetStatus::Submitted, Some(&deny));
        let pre = Event::PreToolUse.answer(&denied, 5);
        assert_eq!(pre["hookSpecificOutput"]["permissionDecision"], "deny");
        assert_eq!(
            pre["hookSpecificOutput"]["permissionDecisionReason"],
            "Denied in widgetd by bob: not now"
        );
        assert!(matches!(
            Event::parse("SessionStart"),
            Err(widgetd_domain::Error::Invalid {
                code: "unsupported_hook_event",
                ..
            })
        ));
    }
}
