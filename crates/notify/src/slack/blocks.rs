//! The Block Kit message of a widget (Slack's Block Kit reference: section,
//! actions and button elements; `mrkdwn` text objects, in which `&`, `<`
//! and `>` are written `&amp;`, `&lt;`, `&gt;`; as published in 2025).
//!
//! What Slack may answer: a single one-choice question of `ask` or
//! `ask_user` (one button per option), and an approval (Deny, Allow once).
//! Everything else, and anything that would not show in full, gets a link
//! to widgetd's page instead of buttons: env vars are never asked in
//! Slack, and a message never carries a value. When the widget ends, the
//! message shows its card's badge ("Answered by … at …") and no buttons.

use serde_json::{Value, json};

use widgetd_domain::clock;
use widgetd_domain::widgets::engine::text::visible_controls;
use widgetd_domain::widgets::kinds::approval::{ApprovalParams, InputDisplay};
use widgetd_domain::widgets::kinds::ask::AskParams;
use widgetd_domain::widgets::{WidgetRow, WidgetStatus};

/// Slack's limits: a section's text, a button's text.
const MAX_SECTION_CHARS: usize = 3000;
const MAX_BUTTON_CHARS: usize = 75;
/// The `block_id` prefix of the actions block that answers a widget.
const BLOCK_PREFIX: &str = "widgetd:";
/// The `action_id` of the link button, which answers nothing.
pub const OPEN_ACTION: &str = "open";

/// A message: its notification text and its blocks.
pub struct Message {
    pub text: String,
    pub blocks: Value,
}

/// `&`, `<` and `>` as Slack's text objects want them; nothing else.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// What a button of a widget's message does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// The question's option at this index.
    Option(usize),
    /// An approval's decision: `deny` or `once`.
    Decision(&'static str),
}

/// The widget id an actions block answers.
pub fn widget_of_block(block_id: &str) -> Option<&str> {
    block_id.strip_prefix(BLOCK_PREFIX)
}

/// Reads a button's `action_id` and `value`.
pub fn read_choice(action_id: &str, value: &str) -> Option<Choice> {
    match (action_id, value) {
        ("decision.deny", "deny") => Some(Choice::Decision("deny")),
        ("decision.once", "once") => Some(Choice::Decision("once")),
        (id, value) if id.starts_with("option.") => {
            let i: usize = value.parse().ok()?;
            (id == format!("option.{i}")).then_some(Choice::Option(i))
        }
        _ => None,
    }
}

/// The answer form fields a choice stands for, if the widget offers it in
/// Slack (the same fields widgetd's own form sends).
pub fn answer_fields(widget: &WidgetRow, choice: &Choice) -> Option<Vec<(String, String)>> {
    match (widget.kind.as_str(), choice) {
        ("ask" | "ask_user", Choice::Option(i)) => {
            let params: AskParams = serde_json::from_str(&widget.params).ok()?;
            let q = one_choice_question(&params)?;
            let label = q.options.get(*i)?.label.clone();
            Some(vec![("answer.0".to_owned(), label)])
        }
        ("approval", Choice::Decision(d)) => {
            let params: ApprovalParams = serde_json::from_str(&widget.params).ok()?;
            approval_text(&params)?;
            Some(vec![("decision".to_owned(), (*d).to_owned())])
        }
        _ => None,
    }
}

fn one_choice_question(
    params: &AskParams,
) -> Option<&widgetd_domain::widgets::kinds::ask::Question> {
    match params.questions.as_slice() {
        [q] if !q.multi_select && q.options.iter().all(|o| o.preview_markdown.is_none()) => Some(q),
        _ => None,
    }
}

/// The message of `widget` of the session titled `title`, as it is now.
pub fn message(widget: &WidgetRow, title: &str, public_url: &str) -> Message {
    let url = format!("{public_url}/widgets/{}", widget.id);
    let title = escape(&visible_controls(title));
    if widget.status != WidgetStatus::Pending {
        return ended(widget, &title, &url);
    }
    let asked = match widget.kind.as_str() {
        "ask" | "ask_user" => serde_json::from_str::<AskParams>(&widget.params)
            .ok()
            .and_then(|p| question(widget, &p)),
        "approval" => serde_json::from_str::<ApprovalParams>(&widget.params)
            .ok()
            .and_then(|p| approval(widget, &p)),
        _ => None,
    };
    let (text, mut blocks) = asked.unwrap_or_else(|| {
        let what = match widget.kind.as_str() {
            "env_vars" => "asks for values, which are entered only in widgetd",
            _ => "asks you something that is answered in widgetd",
        };
        (format!("The agent in {title} {what}."), Vec::new())
    });
    let head = section(&format!("*{title}*\n{text}"));
    blocks.insert(0, head);
    blocks.push(json!({ "type": "actions", "elements": [open_button(&url)] }));
    Message {
        text: format!("widgetd: {text}"),
        blocks: Value::Array(blocks),
    }
}

fn section(mrkdwn: &str) -> Value {
    json!({ "type": "section", "text": { "type": "mrkdwn", "text": mrkdwn } })
}

fn button(action_id: &str, label: &str, value: &str) -> Value {
    let mut text: String = label.chars().take(MAX_BUTTON_CHARS).collect();
    if label.chars().count() > MAX_BUTTON_CHARS {
        text.pop();
        text.push('…');
    }
    json!({
        "type": "button",
        "action_id": action_id,
        "value": value,
        "text": { "type": "plain_text", "text": text, "emoji": false },
    })
}

fn open_button(url: &str) -> Value {
    json!({
        "type": "button",
        "action_id": OPEN_ACTION,
        "url": url,
        "text": { "type": "plain_text", "text": "Open in widgetd", "emoji": false },
    })
}

/// A one-choice question: its text and one button per option.
fn question(widget: &WidgetRow, params: &AskParams) -> Option<(String, Vec<Value>)> {
    let q = one_choice_question(params)?;
    let mut text = format!("The agent asks: {}", escape(&visible_controls(&q.question)));
    for o in q.options.iter().filter(|o| o.description.is_some()) {
        let about = o.description.as_deref().unwrap_or_default();
        text.push_str(&format!(
            "\n• *{}*: {}",
            escape(&visible_controls(&o.label)),
            escape(&visible_controls(about))
        ));
    }
    if text.chars().count() > MAX_SECTION_CHARS - 200 {
        return None;
    }
    let buttons: Vec<Value> = q
        .options
        .iter()
        .enumerate()
        .map(|(i, o)| button(&format!("option.{i}"), &o.label, &i.to_string()))
        .collect();
    let actions = json!({
        "type": "actions",
        "block_id": format!("{BLOCK_PREFIX}{}", widget.id),
        "elements": buttons,
    });
    Some((text, vec![actions]))
}

/// The approval's tool and input, escaped, as the card shows them; `None`
/// when it would not show in full (too long, or holding a code fence).
fn approval_text(params: &ApprovalParams) -> Option<String> {
    let (shown_as, input) = match params.display() {
        InputDisplay::Command(c) => ("Command", c),
        InputDisplay::Path(p) => ("Path", p),
        InputDisplay::Json(j) => ("Input", j),
    };
    let mut text = format!(
        "The agent asks to run *{}*.\n{shown_as}:\n{}",
        escape(&visible_controls(&params.tool)),
        fenced(&input)?
    );
    if let Some(rest) = params.rest() {
        text.push_str(&format!("\nWith:\n{}", fenced(&rest)?));
    }
    if let Some(reason) = &params.reason {
        text.push_str(&format!("\nWhy: {}", escape(&visible_controls(reason))));
    }
    (text.chars().count() <= MAX_SECTION_CHARS).then_some(text)
}

/// A code block; `None` for text holding a fence, which would end it.
fn fenced(text: &str) -> Option<String> {
    let shown = escape(&visible_controls(text));
    (!shown.contains("```")).then(|| format!("```{shown}```"))
}

fn approval(widget: &WidgetRow, params: &ApprovalParams) -> Option<(String, Vec<Value>)> {
    let text = approval_text(params)?;
    let mut deny = button("decision.deny", "Deny", "deny");
    deny["style"] = json!("danger");
    let mut once = button("decision.once", "Allow once", "once");
    once["style"] = json!("primary");
    let actions = json!({
        "type": "actions",
        "block_id": format!("{BLOCK_PREFIX}{}", widget.id),
        "elements": [deny, once],
    });
    Some((text, vec![actions]))
}

/// An ended widget: its badge, and the link.
fn ended(widget: &WidgetRow, title: &str, url: &str) -> Message {
    let result: Value = widget
        .result
        .as_deref()
        .and_then(|r| serde_json::from_str(r).ok())
        .unwrap_or(Value::Null);
    let when = clock::readable(widget.resolved_at.unwrap_or(widget.created_at));
    let loaded = widgetd_domain::widgets::kinds::load_or_lapsed(&widget.kind, &widget.params);
    let badge = loaded
        .badge(widget.status, &result, &when)
        .map_or_else(|| widget.status.as_str().to_owned(), |b| b.text);
    let text = escape(&visible_controls(&badge));
    Message {
        text: format!("widgetd: {text}"),
        blocks: json!([
            section(&format!("*{title}*\n{text}")),
            { "type": "actions", "elements": [open_button(url)] },
        ]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_three_control_characters_are_escaped() {
        assert_eq!(
            escape("a && b <@U123> 'x' \"y\""),
            "a &amp;&amp; b &lt;@U123&gt; 'x' \"y\""
        );
    }

    #[test]
    fn buttons_are_read_only_as_sent() {
        assert_eq!(read_choice("option.2", "2"), Some(Choice::Option(2)));
        assert_eq!(read_choice("option.2", "3"), None);
        assert_eq!(read_choice("option.02", "2"), None);
        assert_eq!(
            read_choice("decision.once", "once"),
            Some(Choice::Decision("once"))
        );
        assert_eq!(read_choice("decision.once", "always"), None);
        assert_eq!(read_choice("decision.always", "always"), None);
        assert_eq!(widget_of_block("widgetd:abc"), Some("abc"));
        assert_eq!(widget_of_block("abc"), None);
    }

    fn pending(kind: &str, params: serde_json::Value) -> WidgetRow {
        WidgetRow {
            id: widgetd_domain::widgets::WidgetId::generate(),
            session_id: widgetd_domain::ids::SessionId::generate(),
            kind: kind.to_owned(),
            params: params.to_string(),
            status: WidgetStatus::Pending,
            result: None,
            created_at: 0,
            expires_at: 1,
            resolved_at: None,
            resolved_by: None,
        }
    }

    #[test]
    fn what_is_not_shown_in_full_or_is_an_env_var_request_gets_no_buttons() {
        let fenced = pending(
            "approval",
            json!({ "tool": "Bash", "input": { "command": "echo ```x```" } }),
        );
        let env = pending(
            "env_vars",
            json!({ "names": ["A_KEY"], "reason": "r", "default_scope": "global" }),
        );
        let several = pending(
            "ask_user",
            json!({ "questions": [
                { "question": "A?", "header": "A", "options": [{ "label": "x" }, { "label": "y" }] },
                { "question": "B?", "header": "B", "options": [{ "label": "x" }, { "label": "y" }] }] }),
        );
        for widget in [&fenced, &env, &several] {
            let blocks = message(widget, "t", "https://w.example").blocks.to_string();
            assert!(!blocks.contains(BLOCK_PREFIX), "{} {blocks}", widget.kind);
            assert!(blocks.contains(&format!("https://w.example/widgets/{}", widget.id)));
        }
        // A click on such a message (forged, or from an older version) answers nothing.
        assert_eq!(answer_fields(&fenced, &Choice::Decision("once")), None);
        assert_eq!(answer_fields(&several, &Choice::Option(0)), None);
        assert_eq!(answer_fields(&env, &Choice::Option(0)), None);
        let plain = pending(
            "approval",
            json!({ "tool": "Bash", "input": { "command": "ls" } }),
        );
        assert_eq!(
            answer_fields(&plain, &Choice::Decision("once")),
            Some(vec![("decision".to_owned(), "once".to_owned())])
        );
    }

    #[test]
    fn a_fence_in_a_command_is_never_shown_as_mrkdwn() {
        assert_eq!(
            fenced("ls <a> & b").as_deref(),
            Some("```ls &lt;a&gt; &amp; b```")
        );
        assert_eq!(fenced("echo ```*bold*```"), None);
    }
}
