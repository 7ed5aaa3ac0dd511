//! What the pages show, built from stored rows: names, statuses, sanitized
//! markdown. Nothing here ever holds a value.

use std::collections::BTreeSet;

use serde_json::Value;

use super::markdown;
use crate::clock;
use crate::transcript::Message;
use crate::widgets::approval::{APPROVAL, ApprovalParams, InputDisplay};
use crate::widgets::{
    ASK, ASK_USER, AskParams, ENV_VARS, EnvVarsParams, ScopeChoice, SimpleKind, WidgetRow,
    WidgetStatus,
};

/// One input of an env_vars form.
pub struct NameField {
    pub name: String,
    pub input_id: String,
    pub multiline: bool,
    pub description: Option<String>,
    pub placeholder: String,
    /// A global value exists that can be reused.
    pub saved: bool,
    pub error: Option<String>,
}

/// A resolved widget's badge.
pub struct Badge {
    pub class: &'static str,
    pub icon: &'static str,
    pub text: String,
}

/// An env_vars widget as the transcript shows it.
pub struct EnvVarsCard {
    /// The user whose vault receives the values (the session's creator).
    pub vault_owner: String,
    pub fields: Vec<NameField>,
    pub names: String,
    pub reason: String,
    pub instructions_html: Option<String>,
    pub global_default: bool,
}

/// One choice of a question as shown.
pub struct OptionView {
    pub label: String,
    pub description: Option<String>,
    pub preview_html: Option<String>,
    pub input_id: String,
    pub checked: bool,
}

/// One question as shown.
pub struct QuestionView {
    pub index: usize,
    pub question: String,
    pub header: String,
    pub multi: bool,
    pub options: Vec<OptionView>,
    pub other_id: String,
    /// Answered with a drop-down list.
    pub select: bool,
    /// A free-text answer is offered ("Other").
    pub other: bool,
}

/// A question widget (`ask_user`, or a simple `ask`) as shown.
pub struct AskCard {
    pub questions: Vec<QuestionView>,
    /// Answered by clicking one of the option buttons.
    pub buttons: bool,
    /// Question and answer, once answered.
    pub answers: Vec<(String, String)>,
}

/// An approval request as shown.
pub struct ApprovalCard {
    pub tool: String,
    /// `command`, `path` or `json`: how `input` is shown.
    pub shown_as: &'static str,
    pub input: String,
    /// The input's other fields, when a command or path is shown on its own.
    pub rest: Option<String>,
    pub reason: Option<String>,
    /// For a plain shell command: the pattern "Always allow commands like"
    /// offers first.
    pub pattern: Option<String>,
}

/// A refused answer, shown in the widget's form.
pub struct FormError {
    pub code: String,
    pub message: String,
}

/// Any widget in the transcript.
pub struct WidgetCard {
    pub id: String,
    pub kind: String,
    pub status: &'static str,
    /// `None` for another kind.
    pub env: Option<EnvVarsCard>,
    /// `None` for another kind.
    pub ask: Option<AskCard>,
    /// `None` for another kind.
    pub approval: Option<ApprovalCard>,
    pub badge: Option<Badge>,
    pub form_error: Option<FormError>,
}

/// A text message of the transcript.
pub struct TextEntry {
    pub id: i64,
    pub role: String,
    pub body: String,
    pub time: String,
}

/// One transcript entry.
pub enum Entry {
    Text(TextEntry),
    Widget(Box<WidgetCard>),
}

fn names_of(result: &Value) -> String {
    result["names"]
        .as_array()
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

fn badge(widget: &WidgetRow) -> Option<Badge> {
    let result: Value = widget
        .result
        .as_deref()
        .and_then(|r| serde_json::from_str(r).ok())
        .unwrap_or(Value::Null);
    let names = names_of(&result);
    let when = widget.resolved_at.map(clock::rfc3339).unwrap_or_default();
    let who = |key: &str| result[key].as_str().unwrap_or("someone").to_owned();
    // Questions have no names; env var requests say which.
    let what = match widget.kind.as_str() {
        _ if !names.is_empty() => format!("Request for {names}"),
        APPROVAL => "Approval request".to_owned(),
        _ => "Question".to_owned(),
    };
    let (class, icon, text) = match widget.status {
        WidgetStatus::Pending => return None,
        WidgetStatus::Submitted if result.get("decision").is_some() => {
            match result["decision"].as_str() {
                Some("once") => (
                    "submitted",
                    "✅",
                    format!("Approved once by {} at {when}", who("answered_by")),
                ),
                Some("always") => (
                    "submitted",
                    "✅",
                    format!("Always approved by {} at {when}", who("answered_by")),
                ),
                _ => {
                    let why = result["reason"]
                        .as_str()
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default();
                    (
                        "denied",
                        "⊘",
                        format!("Denied by {} at {when}{why}", who("answered_by")),
                    )
                }
            }
        }
        WidgetStatus::AlreadyPresent if result.get("decision").is_some() => (
            "already-present",
            "✓",
            "Approved automatically (always allowed for this input)".to_owned(),
        ),
        WidgetStatus::Submitted if result.get("answers").is_some() => (
            "submitted",
            "✅",
            format!("Answered by {} at {when}", who("answered_by")),
        ),
        WidgetStatus::Submitted => (
            "submitted",
            "✅",
            format!(
                "{names} saved (scope: {}) by {} at {when}",
                result["scope"].as_str().unwrap_or("session"),
                who("submitted_by")
            ),
        ),
        WidgetStatus::Dismissed => (
            "dismissed",
            "⊘",
            format!("{what} dismissed by {} at {when}", who("dismissed_by")),
        ),
        WidgetStatus::AlreadyPresent => (
            "already-present",
            "✓",
            format!("{names} already configured"),
        ),
        WidgetStatus::Expired => (
            "expired",
            "⌛",
            format!("{what} expired at {when}; nothing was given"),
        ),
        WidgetStatus::Cancelled => (
            "cancelled",
            "✕",
            format!("{what} cancelled (session archived); nothing was given"),
        ),
    };
    Some(Badge { class, icon, text })
}

fn ask_card(widget: &WidgetRow) -> Option<AskCard> {
    let params: AskParams = serde_json::from_str(&widget.params).ok()?;
    let result: Value = widget
        .result
        .as_deref()
        .and_then(|r| serde_json::from_str(r).ok())
        .unwrap_or(Value::Null);
    let answers = result["answers"]
        .as_object()
        .map(|m| m.iter().map(|(q, a)| (q.clone(), answer_text(a))).collect())
        .unwrap_or_default();
    let questions = params
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
                    input_id: format!("w-{}-q{index}-o{n}", widget.id),
                    checked: params.default_of(q) == Some(o.label.as_str()),
                })
                .collect(),
            other_id: format!("w-{}-q{index}-other", widget.id),
        })
        .collect();
    Some(AskCard {
        questions,
        buttons: params.answered_by_button(),
        answers,
    })
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

/// What is approved must read as what runs: invisible and direction-changing
/// characters (bidi overrides and isolates, zero-width ones, other format
/// and control characters but newline and tab) are shown as `⟨U+202E⟩`, so
/// a command cannot look different from its bytes ("Trojan Source").
pub fn visible_controls(text: &str) -> String {
    let hidden = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{00AD}' | '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}' | '\u{2060}'..='\u{206F}' | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}')
    };
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if hidden(c) {
            out.push_str(&format!("⟨U+{:04X}⟩", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

fn approval_card(widget: &WidgetRow) -> Option<ApprovalCard> {
    let params: ApprovalParams = serde_json::from_str(&widget.params).ok()?;
    let (shown_as, input) = match params.display() {
        InputDisplay::Command(c) => ("command", c),
        InputDisplay::Path(p) => ("path", p),
        InputDisplay::Json(j) => ("json", j),
    };
    Some(ApprovalCard {
        tool: visible_controls(&params.tool),
        shown_as,
        input: visible_controls(&input),
        rest: params.rest().as_deref().map(visible_controls),
        reason: params.reason.as_deref().map(visible_controls),
        pattern: params.suggested_pattern(),
    })
}

/// Whose vault a session's answers go to, and which global names it holds.
pub struct Vault {
    pub owner: String,
    pub saved_globals: BTreeSet<String>,
}

fn env_card(widget: &WidgetRow, vault: &Vault, error: Option<&str>) -> Option<EnvVarsCard> {
    let params: EnvVarsParams = serde_json::from_str(&widget.params).ok()?;
    let fields = params
        .names
        .iter()
        .map(|name| {
            let meta = params
                .variable_metadata
                .get(name.as_str())
                .cloned()
                .unwrap_or_default();
            NameField {
                name: name.to_string(),
                input_id: format!("w-{}-{name}", widget.id),
                multiline: meta.multiline,
                description: meta.description,
                placeholder: meta.placeholder.unwrap_or_default(),
                saved: vault.saved_globals.contains(name.as_str()),
                // Our messages name the variable they are about.
                error: error
                    .filter(|e| mentions(e, name.as_str()))
                    .map(str::to_owned),
            }
        })
        .collect();
    Some(EnvVarsCard {
        vault_owner: vault.owner.clone(),
        fields,
        names: params.name_strs().join(", "),
        reason: params.reason,
        instructions_html: params.instructions.as_deref().map(markdown::render),
        global_default: params.default_scope == ScopeChoice::Global,
    })
}

/// Whether `text` names `name` as a whole word.
fn mentions(text: &str, name: &str) -> bool {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|word| word == name)
}

/// The card of `widget`; `error` is a refused answer to show in its form.
pub fn widget_card(widget: &WidgetRow, vault: &Vault, error: Option<&FormError>) -> WidgetCard {
    let message = error.map(|e| e.message.as_str());
    let env = (widget.kind == ENV_VARS)
        .then(|| env_card(widget, vault, message))
        .flatten();
    let ask = (widget.kind == ASK_USER || widget.kind == ASK)
        .then(|| ask_card(widget))
        .flatten();
    let approval = (widget.kind == APPROVAL)
        .then(|| approval_card(widget))
        .flatten();
    WidgetCard {
        id: widget.id.to_string(),
        kind: widget.kind.clone(),
        status: widget.status.as_str(),
        env,
        ask,
        approval,
        badge: badge(widget),
        form_error: error.map(|e| FormError {
            code: e.code.clone(),
            message: e.message.clone(),
        }),
    }
}

/// The transcript in order: messages, and widgets where their message stands.
pub fn entries(
    messages: Vec<Message>,
    widgets: Vec<WidgetRow>,
    vault: &Vault,
    error: Option<(&str, &FormError)>,
) -> Vec<Entry> {
    let mut widgets: std::collections::HashMap<String, WidgetRow> =
        widgets.into_iter().map(|w| (w.id.to_string(), w)).collect();
    messages
        .into_iter()
        .filter_map(|m| match m.widget_id {
            Some(id) => widgets.remove(&id).map(|w| {
                let err = error.filter(|(wid, _)| *wid == id).map(|(_, e)| e);
                Entry::Widget(Box::new(widget_card(&w, vault, err)))
            }),
            None => Some(Entry::Text(TextEntry {
                id: m.id,
                role: format!("{:?}", m.role).to_lowercase(),
                body: m.body.unwrap_or_default(),
                time: clock::rfc3339(m.created_at),
            })),
        })
        .collect()
}
