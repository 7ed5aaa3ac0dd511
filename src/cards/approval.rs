//! The approval card (`templates/widgets/approval.html`): the tool and its
//! input as what they are (a command, a path, JSON), every invisible or
//! direction-changing character made visible, and the decision buttons.

use askama::Template;
use widgetd_domain::widgets::engine::text::visible_controls;

use crate::cards::{self, Card};
use widgetd_domain::Result;
use widgetd_domain::widgets::kinds::approval::{ApprovalParams, InputDisplay};

/// An approval request as shown.
struct ApprovalView {
    tool: String,
    /// `command`, `path` or `json`: how `input` is shown.
    shown_as: &'static str,
    input: String,
    /// The input's other fields, when a command or path is shown on its own.
    rest: Option<String>,
    reason: Option<String>,
    /// The fields "Always" lets differ, named (`description`).
    free: Option<String>,
    /// For a plain shell command: the pattern "Always allow commands like"
    /// offers first.
    pattern: Option<String>,
    /// Where the agent allowed editing: the input as indented JSON, the
    /// edit box's starting text.
    edit: Option<String>,
    /// Once allowed with an edit: the edited input, as indented JSON.
    edited: Option<String>,
    /// Distinct approvers needed (1: the usual single decision).
    needed: u32,
    /// Who approved so far, while more are needed.
    approved_by: Vec<String>,
}

#[derive(Template)]
#[template(path = "widgets/approval.html")]
struct ApprovalCard<'a> {
    card: &'a Card<'a>,
    ap: ApprovalView,
}

/// Who approved so far: the votes of a pending request, or the
/// `approvers` of a decided one.
fn approved_by(result: Option<&serde_json::Value>) -> Vec<String> {
    let Some(result) = result else {
        return Vec::new();
    };
    let names = match result["approvers"].as_array() {
        Some(names) => names
            .iter()
            .filter_map(|n| n.as_str().map(str::to_owned))
            .collect(),
        None => widgetd_domain::widgets::kinds::approval::quorum::names(
            result["approvals"].as_array().map_or(&[], Vec::as_slice),
        ),
    };
    names
        .iter()
        .map(|n| widgetd_domain::widgets::engine::badge::shown_answerer(n))
        .collect()
}

/// The inside of an approval card.
pub(super) fn render(params: &ApprovalParams, card: &Card<'_>) -> Result<String> {
    let (shown_as, input) = match params.display() {
        InputDisplay::Command(c) => ("command", c),
        InputDisplay::Path(p) => ("path", p),
        InputDisplay::Json(j) => ("json", j),
    };
    let ap = ApprovalView {
        tool: visible_controls(&params.tool),
        shown_as,
        input: visible_controls(&input),
        rest: params.rest().as_deref().map(visible_controls),
        reason: params.reason.as_deref().map(visible_controls),
        free: Some(params.free_fields())
            .filter(|f| !f.is_empty())
            .map(|f| f.join(", ")),
        pattern: params.suggested_pattern().filter(|_| params.quorum() == 1),
        // Several approvers approve the input as asked: no edit box.
        edit: (params.allow_edit && params.quorum() == 1)
            .then(|| widgetd_domain::widgets::kinds::approval::edit::shown(params)),
        edited: card
            .result
            .and_then(|r| r.get("edited_input"))
            .map(|e| visible_controls(&serde_json::to_string_pretty(e).unwrap_or_default())),
        needed: params.quorum(),
        approved_by: approved_by(card.result),
    };
    cards::render(&ApprovalCard { card, ap })
}
