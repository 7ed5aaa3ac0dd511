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
//!
//! The session's title has a section of its own, so what is asked is
//! measured without it. Every finished message passes `limits::check`
//! (Slack's limits, measured after escaping); one that does not becomes
//! the link-only message, which always fits.

use serde_json::{Value, json};

use super::limits;
use widgetd_domain::clock;
use widgetd_domain::widgets::engine::text::visible_controls;
use widgetd_domain::widgets::kinds::approval::{ApprovalParams, InputDisplay};
use widgetd_domain::widgets::kinds::ask::AskParams;
use widgetd_domain::widgets::{WidgetRow, WidgetStatus};

/// How much of the session's title a message shows: more than a session's
/// title may have (200 characters), yet a section holds it even with every
/// character shown as `⟨U+202E⟩` (eight) or escaped (five).
const TITLE_CHARS: usize = 300;
/// How much of it the link-only message keeps.
const LINK_ONLY_TITLE_CHARS: usize = 100;
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

/// Text of the agent's or the session's as a message shows it: hidden
/// characters made visible, then escaped.
fn shown(text: &str) -> String {
    escape(&visible_controls(text))
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

/// The answer form fields a choice stands for, if the widget's message
/// offers it in Slack (the same fields widgetd's own form sends).
pub fn answer_fields(widget: &WidgetRow, choice: &Choice) -> Option<Vec<(String, String)>> {
    asked(widget)?;
    match (widget.kind.as_str(), choice) {
        ("ask" | "ask_user", Choice::Option(i)) => {
            let params: AskParams = serde_json::from_str(&widget.params).ok()?;
            let q = one_choice_question(&params)?;
            let label = q.options.get(*i)?.label.clone();
            Some(vec![("answer.0".to_owned(), label)])
        }
        ("approval", Choice::Decision(d)) => Some(vec![("decision".to_owned(), (*d).to_owned())]),
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

/// The message of `widget` of the session titled `title`, as it is now:
/// within Slack's limits whatever the widget and the title hold.
pub fn message(widget: &WidgetRow, title: &str, public_url: &str) -> Message {
    let url = format!("{public_url}/widgets/{}", widget.id);
    let built = if widget.status == WidgetStatus::Pending {
        pending(widget, title, &url)
    } else {
        ended(widget, title, &url)
    };
    match limits::check(&built.text, &built.blocks) {
        Ok(()) => built,
        Err(unfit) => {
            tracing::warn!(widget = %widget.id, %unfit, "a Slack message over Slack's limits goes as a link only");
            link_only(widget, title, &url)
        }
    }
}

/// What a pending widget asks in Slack, if Slack may answer it and it fits
/// Slack's limits by itself: its text, and its section and buttons.
fn asked(widget: &WidgetRow) -> Option<(String, Vec<Value>)> {
    let (text, actions) = match widget.kind.as_str() {
        "ask" | "ask_user" => question(widget, &serde_json::from_str(&widget.params).ok()?)?,
        "approval" => approval(widget, &serde_json::from_str(&widget.params).ok()?)?,
        _ => return None,
    };
    let blocks = vec![section(&text), actions];
    limits::check(&notification(&text), &Value::Array(blocks.clone())).ok()?;
    Some((text, blocks))
}

fn pending(widget: &WidgetRow, title: &str, url: &str) -> Message {
    let title = limits::cut(title, TITLE_CHARS);
    let (text, mut blocks) = asked(widget).unwrap_or_else(|| {
        let text = format!(
            "The agent in {} {}.",
            shown(&title),
            only_in_widgetd(widget)
        );
        (text.clone(), vec![section(&text)])
    });
    blocks.insert(0, section(&format!("*{}*", shown(&title))));
    blocks.push(json!({ "type": "actions", "elements": [open_button(url)] }));
    Message {
        text: notification(&text),
        blocks: Value::Array(blocks),
    }
}

/// What a widget whose message has no buttons asks, in a few words.
fn only_in_widgetd(widget: &WidgetRow) -> &'static str {
    match (widget.kind.as_str(), widget.status) {
        ("env_vars", WidgetStatus::Pending) => "asks for values, which are entered only in widgetd",
        (_, WidgetStatus::Pending) => "asks you something that is answered in widgetd",
        _ => "asked you something; it has ended",
    }
}

/// The message that always fits: the title cut short, a line, the link.
fn link_only(widget: &WidgetRow, title: &str, url: &str) -> Message {
    let title = shown(&limits::cut(title, LINK_ONLY_TITLE_CHARS));
    let text = format!("The agent in {title} {}.", only_in_widgetd(widget));
    let mut blocks = vec![section(&format!("*{title}*")), section(&text)];
    // A public URL too long for a button (over 2,900 characters) leaves
    // the message without its link rather than undelivered.
    if limits::length(url) <= limits::MAX_URL {
        blocks.push(json!({ "type": "actions", "elements": [open_button(url)] }));
    }
    Message {
        text: notification(&text),
        blocks: Value::Array(blocks),
    }
}

fn notification(text: &str) -> String {
    format!("widgetd: {text}")
}

fn section(mrkdwn: &str) -> Value {
    json!({ "type": "section", "text": { "type": "mrkdwn", "text": mrkdwn } })
}

fn button(action_id: &str, label: &str, value: &str) -> Value {
    json!({
        "type": "button",
        "action_id": action_id,
        "value": value,
        "text": { "type": "plain_text", "text": limits::cut(label, limits::MAX_BUTTON_TEXT), "emoji": false },
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
fn question(widget: &WidgetRow, params: &AskParams) -> Option<(String, Value)> {
    let q = one_choice_question(params)?;
    let mut text = format!("The agent asks: {}", shown(&q.question));
    for o in q.options.iter().filter(|o| o.description.is_some()) {
        let about = o.description.as_deref().unwrap_or_default();
        text.push_str(&format!("\n• *{}*: {}", shown(&o.label), shown(about)));
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
    Some((text, actions))
}

/// The approval's tool and input, escaped, as the card shows them; `None`
/// when it holds a code fence, which would end the code block early.
fn approval_text(params: &ApprovalParams) -> Option<String> {
    let (shown_as, input) = match params.display() {
        InputDisplay::Command(c) => ("Command", c),
        InputDisplay::Path(p) => ("Path", p),
        InputDisplay::Json(j) => ("Input", j),
    };
    let mut text = format!(
        "The agent asks to run *{}*.\n{shown_as}:\n{}",
        shown(&params.tool),
        fenced(&input)?
    );
    if let Some(rest) = params.rest() {
        text.push_str(&format!("\nWith:\n{}", fenced(&rest)?));
    }
    if let Some(reason) = &params.reason {
        text.push_str(&format!("\nWhy: {}", shown(reason)));
    }
    Some(text)
}

/// A code block; `None` for text holding a fence, which would end it.
fn fenced(text: &str) -> Option<String> {
    let text = shown(text);
    (!text.contains("```")).then(|| format!("```{text}```"))
}

fn approval(widget: &WidgetRow, params: &ApprovalParams) -> Option<(String, Value)> {
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
    Some((text, actions))
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
    let text = shown(&badge);
    Message {
        text: notification(&text),
        blocks: json!([
            section(&format!("*{}*", shown(&limits::cut(title, TITLE_CHARS)))),
            section(&text),
            { "type": "actions", "elements": [open_button(url)] },
        ]),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

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

    /// Every message passes the check, and offers buttons exactly when a
    /// click on them would be taken.
    fn assert_fits(widget: &WidgetRow, title: &str) {
        let m = message(widget, title, "https://widgetd.example.org");
        if let Err(unfit) = limits::check(&m.text, &m.blocks) {
            panic!(
                "{unfit}: {} title chars, {}",
                title.chars().count(),
                widget.params
            );
        }
        let buttons = m.blocks.to_string().contains(BLOCK_PREFIX);
        let choice = match widget.kind.as_str() {
            "approval" => Choice::Decision("once"),
            _ => Choice::Option(0),
        };
        let taken = answer_fields(widget, &choice).is_some();
        assert_eq!(buttons, taken && widget.status == WidgetStatus::Pending);
    }

    #[test]
    fn the_messages_of_the_issue_fit_and_keep_their_buttons() {
        // A 2,950-character command under any title was a 3,073-character
        // section; a question of 500 `&` under a title of 200 `&`, 3,777.
        let command = "x".repeat(2950);
        let approval = pending(
            "approval",
            json!({ "tool": "Bash", "input": { "command": command } }),
        );
        let amps = "&".repeat(500);
        let question = pending(
            "ask_user",
            json!({ "questions": [{ "question": amps, "header": "H",
                "options": [{ "label": "a" }, { "label": "b" }] }] }),
        );
        for title in ["t", &"&".repeat(200), &"\u{202E}".repeat(200)] {
            assert_fits(&approval, title);
            assert_fits(&question, title);
            for widget in [&approval, &question] {
                let blocks = message(widget, title, "https://w.example")
                    .blocks
                    .to_string();
                assert!(blocks.contains(BLOCK_PREFIX), "{blocks}");
            }
        }
    }

    #[test]
    fn what_does_not_fit_is_asked_in_widgetd_with_the_title_cut_whole() {
        // 2,990 `<` become 11,960 characters: the question does not fit.
        let lts = "<".repeat(2990);
        let widget = pending(
            "ask_user",
            json!({ "questions": [{ "question": lts, "header": "H",
                "options": [{ "label": "a" }, { "label": "b" }] }] }),
        );
        let m = message(&widget, "Deploy", "https://w.example");
        let blocks = m.blocks.to_string();
        assert!(!blocks.contains(BLOCK_PREFIX), "{blocks}");
        assert!(blocks.contains("asks you something that is answered in widgetd"));
        assert!(blocks.contains(&format!("https://w.example/widgets/{}", widget.id)));
        assert_eq!(answer_fields(&widget, &Choice::Option(0)), None);
        // A public URL no button holds: the link-only message, its title
        // cut to 100 before escaping (whole entities, never `&am…`), and
        // no button.
        let title = format!("{}&&&", "a".repeat(98));
        let long = format!("https://{}", "w".repeat(3000));
        let m = message(&widget, &title, &long);
        assert_eq!(limits::check(&m.text, &m.blocks), Ok(()));
        let head = m.blocks[0]["text"]["text"].as_str().unwrap();
        assert_eq!(head, format!("*{}&amp;…*", "a".repeat(98)));
        assert!(!m.blocks.to_string().contains(&long));
    }

    /// Text heavy in what escaping or `visible_controls` lengthens, of a
    /// length drawn from `lengths`.
    fn hostile(lengths: impl Strategy<Value = usize>) -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just('&'),
            Just('<'),
            Just('>'),
            Just('x'),
            Just('\u{202E}'),
            Just('🦀'),
            Just('`'),
        ];
        // A short pattern repeated to the length: cheap to make at 4,000.
        (lengths, proptest::collection::vec(piece, 1..6))
            .prop_map(|(n, pattern)| pattern.into_iter().cycle().take(n).collect())
    }

    /// Lengths at and around each limit a text meets.
    fn around_limits() -> impl Strategy<Value = usize> {
        prop_oneof![
            0usize..4,
            70usize..82,
            140usize..160,
            195usize..205,
            290usize..310,
            495usize..505,
            580usize..620,
            990usize..1010,
            1990usize..2010,
            2980usize..3010,
            3990usize..4010,
        ]
    }

    fn ended_too(widget: WidgetRow, ended: bool) -> WidgetRow {
        WidgetRow {
            status: if ended {
                WidgetStatus::Expired
            } else {
                WidgetStatus::Pending
            },
            ..widget
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn every_question_message_fits(
            title in hostile(around_limits()),
            question in hostile(around_limits()),
            labels in proptest::collection::vec(hostile(1usize..90), 2..=10),
            about in proptest::option::of(hostile(around_limits())),
            ended in any::<bool>(),
        ) {
            let options: Vec<Value> = labels
                .iter()
                .map(|l| json!({ "label": l, "description": about }))
                .collect();
            let widget = pending("ask_user", json!({ "questions": [
                { "question": question, "header": "H", "options": options }] }));
            assert_fits(&ended_too(widget, ended), &title);
        }

        #[test]
        fn every_approval_message_fits(
            title in hostile(around_limits()),
            command in hostile(around_limits()),
            reason in proptest::option::of(hostile(around_limits())),
            tool in hostile(1usize..120),
            ended in any::<bool>(),
        ) {
            let widget = pending("approval", json!({
                "tool": tool, "input": { "command": command }, "reason": reason }));
            assert_fits(&ended_too(widget, ended), &title);
        }
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
