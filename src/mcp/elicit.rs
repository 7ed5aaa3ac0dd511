//! What `/mcp` asks an agent's MCP client to show the person: one
//! elicitation per widget, delivered as a 2026-07-28 `input_required`
//! result (the client retries the call with the person's response and the
//! echoed `requestState`, see `super::offers`) or as a 2025-11-25
//! `elicitation/create` request over the client's MCP session (see
//! `super::tools`). The widget itself is durable and stays in the
//! transcript either way.
//!
//! - URL mode, for `request_env_vars` only: the client opens the widget's
//!   own page (`GET /widgets/{id}`), where the person logs in and types the
//!   values; the client never sees them.
//! - Form mode, for questions only (`ask`, `ask_user`, `ask_fields` (see
//!   `super::fields_form`), the `choice`, `curation` and `mapping`
//!   clarifications), where the session opted in:
//!   the question in the spec's restricted schema (flat objects of string
//!   enums, titled enums, arrays of them, and strings). An accepted form
//!   becomes the JSON answer of `POST /widgets/{id}/submit`, with the
//!   form's field names as property names, so it is checked as an answer
//!   given in the transcript, and recorded as the agent's MCP client's
//!   (it holds the agent token: it cannot be told from the agent). Never
//!   for env vars, never for approvals: nothing on the agent's side
//!   decides what the agent may run.
//!
//! The agent's text in a message or a title is shown as the transcript
//! shows it (`visible_controls`: bidi and zero-width characters as
//! `⟨U+202E⟩`), whole, and quoted where it follows widgetd's own words, so
//! it cannot pass for them. An option label (an enum value, sent back as
//! the answer) that holds such a character gets no form: the question is
//! answered in the transcript.

use rmcp::model::{ElicitRequestParams, ElicitationSchema, JsonObject};
use serde_json::{Value, json};

use widgetd_domain::widgets::WidgetRow;
use widgetd_domain::widgets::engine::kind::AGENT_CLIENT_KINDS;
use widgetd_domain::widgets::engine::text::{on_one_line, visible_controls};
use widgetd_domain::widgets::kinds::ask::AskParams;
use widgetd_domain::widgets::kinds::clarification::ClarificationParams;
use widgetd_domain::widgets::kinds::env_vars::EnvVarsParams;

/// The key of the one input request of an `input_required` result.
pub(super) const INPUT_KEY: &str = "person";

/// Most items a curation, and left items a mapping, may have to be asked in
/// a client's form; larger ones are answered in the transcript.
const MAX_FORM_ITEMS: usize = 50;

/// Whether widgets of `kind` may be asked in a client's form at all.
pub(super) fn has_form(kind: &str) -> bool {
    AGENT_CLIENT_KINDS.contains(&kind)
}

/// The agent's text quoted after widgetd's own words.
fn quoted(text: &str) -> String {
    Value::from(on_one_line(text)).to_string()
}

/// Whether `label` can be sent as an enum value the person sees as is.
fn plain_label(label: &str) -> bool {
    visible_controls(label) == label && !label.contains(['\n', '\t'])
}

/// The URL-mode request of an `env_vars` widget: its own page.
pub(super) fn url_request(public_url: &str, row: &WidgetRow) -> Option<ElicitRequestParams> {
    let params: EnvVarsParams = serde_json::from_str(&row.params).ok()?;
    let names: Vec<&str> = params.names.iter().map(|n| n.as_str()).collect();
    let message = format!(
        "The agent needs {}. Open widgetd's page to enter the value{}: it goes straight to \
         widgetd's encrypted store and never passes through this client or the conversation. \
         The agent's reason: {}",
        names.join(", "),
        if names.len() == 1 { "" } else { "s" },
        quoted(&params.reason),
    );
    Some(ElicitRequestParams::UrlElicitationParams {
        meta: None,
        message,
        url: format!("{public_url}/widgets/{}", row.id.as_str()),
        elicitation_id: row.id.as_str().to_owned(),
    })
}

/// The form-mode request of a question widget; `None` for env vars and
/// for anything the restricted schema cannot carry.
pub(super) fn form_request(row: &WidgetRow) -> Option<ElicitRequestParams> {
    let (message, schema) = match row.kind.as_str() {
        "ask" | "ask_user" => questions(&serde_json::from_str(&row.params).ok()?)?,
        "clarification" => clarification(&serde_json::from_str(&row.params).ok()?)?,
        "fields" => super::fields_form::form(&serde_json::from_str(&row.params).ok()?)?,
        _ => return None,
    };
    let requested_schema = ElicitationSchema::from_json_schema(schema).ok()?;
    Some(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema,
    })
}

/// The answer body (`POST /widgets/{id}/submit`'s JSON) of an accepted
/// form's `content`; `None` when there is nothing to answer with. Only
/// the properties the form asked for are taken; the widget's kind checks
/// their values as it checks the transcript's.
pub(super) fn answer_body(row: &WidgetRow, content: &Value) -> Option<Value> {
    let content = content.as_object()?;
    let strings = |v: &Value| match v {
        Value::String(_) => true,
        Value::Array(items) => items.iter().all(Value::is_string),
        _ => false,
    };
    match row.kind.as_str() {
        "ask" | "ask_user" => {
            let fields: serde_json::Map<String, Value> = content
                .iter()
                .filter(|(k, v)| {
                    (k.starts_with("answer.") || k.starts_with("other.")) && strings(v)
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            Some(Value::Object(fields))
        }
        "clarification" => {
            let params: ClarificationParams = serde_json::from_str(&row.params).ok()?;
            let freeform = content
                .get("freeform")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let structured = clarification_answer(&params.widget, content)?;
            Some(json!({ "structured": structured, "freeform": freeform }))
        }
        "fields" => Some(super::fields_form::answer(
            &serde_json::from_str(&row.params).ok()?,
            content,
        )),
        _ => None,
    }
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// `ask` and `ask_user`: one enum (an array of enums when several may be
/// picked) per question, `answer.{i}`, and a string `other.{i}` where a
/// typed answer is offered.
fn questions(params: &AskParams) -> Option<(String, JsonObject)> {
    let mut properties = serde_json::Map::new();
    let mut required = Vec::new();
    for (i, q) in params.questions.iter().enumerate() {
        let labels: Vec<&str> = q.options.iter().map(|o| o.label.as_str()).collect();
        if !labels.iter().all(|l| plain_label(l)) {
            return None;
        }
        let title = match q.header.trim() {
            "" => on_one_line(&q.question),
            header => format!("{}: {}", on_one_line(header), on_one_line(&q.question)),
        };
        let mut answer = if q.multi_select {
            json!({ "type": "array", "title": title, "items": { "type": "string", "enum": labels } })
        } else {
            json!({ "type": "string", "title": title, "enum": labels })
        };
        if let Some(default) = params.default_of(q) {
            answer["default"] = match q.multi_select {
                true => json!([default]),
                false => json!(default),
            };
        }
        properties.insert(format!("answer.{i}"), answer);
        if params.freeform(q) {
            properties.insert(
                format!("other.{i}"),
                json!({
                    "type": "string",
                    "title": "Or type your own answer",
                    "maxLength": 2000,
                }),
            );
        } else {
            required.push(format!("answer.{i}"));
        }
    }
    let message = match params.questions.as_slice() {
        [one] => on_one_line(&one.question),
        many => format!("The agent asks you {} questions.", many.len()),
    };
    let schema = json!({ "type": "object", "properties": properties, "required": required });
    Some((message, object(schema)))
}

/// The clarifications a form can carry: `choice` (the options as an enum,
/// an array of enums with `multi_select`), `curation` (the items to keep,
/// a titled multi-select, at most [`MAX_FORM_ITEMS`]) and `mapping` (a
/// titled select of the right items per left item, at most
/// [`MAX_FORM_ITEMS`] left items), each with the answer in the person's own
/// words. Other types have no form here (a table, a ranking, a tree or a
/// drawing has no shape in the restricted schema).
fn clarification(params: &ClarificationParams) -> Option<(String, JsonObject)> {
    let widget = &params.widget;
    let mut properties = serde_json::Map::new();
    match widget["type"].as_str()? {
        "choice" => {
            let labels: Vec<&str> = widget["options"]
                .as_array()?
                .iter()
                .filter_map(|o| o["label"].as_str())
                .collect();
            if !labels.iter().all(|l| plain_label(l)) {
                return None;
            }
            let selected = if widget["multi_select"] == true {
                json!({ "type": "array", "title": "Pick any that fit", "items": { "type": "string", "enum": labels } })
            } else {
                json!({ "type": "string", "title": "Pick one", "enum": labels })
            };
            properties.insert("selected".into(), selected);
        }
        "curation" => {
            let items = widget["items"].as_array()?;
            if items.len() > MAX_FORM_ITEMS {
                return None;
            }
            let default: Vec<&Value> = match widget["default_state"] == "none_selected" {
                true => Vec::new(),
                false => items.iter().map(|i| &i["id"]).collect(),
            };
            properties.insert(
                "keep".into(),
                json!({
                    "type": "array",
                    "title": "Keep",
                    "items": { "anyOf": titled(items)? },
                    "default": default,
                }),
            );
        }
        "mapping" => {
            let left = widget["left"].as_array()?;
            if left.len() > MAX_FORM_ITEMS {
                return None;
            }
            let right = titled(widget["right"].as_array()?)?;
            for (i, item) in left.iter().enumerate() {
                properties.insert(
                    format!("map.{i}"),
                    json!({ "type": "string", "title": on_one_line(item["label"].as_str()?), "oneOf": right }),
                );
            }
        }
        _ => return None,
    }
    properties.insert(
        "freeform".into(),
        json!({
            "type": "string",
            "title": "In your own words (with the answer above, or instead of it)",
            "maxLength": 4000,
        }),
    );
    let schema = json!({ "type": "object", "properties": properties });
    Some((on_one_line(&params.question), object(schema)))
}

/// Items (`{id, label}`) as titled options: `{const: id, title: label}`.
fn titled(items: &[Value]) -> Option<Vec<Value>> {
    items
        .iter()
        .map(|i| {
            Some(json!({ "const": i["id"].as_str()?, "title": on_one_line(i["label"].as_str()?) }))
        })
        .collect()
}

/// A clarification's `structured` answer from an accepted form's content,
/// in the shape the transcript's JSON answer has; the type checks it.
fn clarification_answer(widget: &Value, content: &serde_json::Map<String, Value>) -> Option<Value> {
    let strings = |v: Option<&Value>| -> Vec<String> {
        match v {
            Some(Value::String(one)) => vec![one.clone()],
            Some(Value::Array(many)) => many
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        }
    };
    match widget["type"].as_str()? {
        "choice" => Some(json!({ "selected": strings(content.get("selected")) })),
        "curation" => {
            let items = widget["items"].as_array()?;
            let ids = items.iter().filter_map(|i| i["id"].as_str());
            // No `keep` at all: the items as they started.
            let kept = match content.get("keep") {
                Some(keep) => strings(Some(keep)),
                None if widget["default_state"] == "none_selected" => Vec::new(),
                None => ids.clone().map(str::to_owned).collect(),
            };
            let removed: Vec<&str> = ids.filter(|id| !kept.iter().any(|k| k == id)).collect();
            Some(json!({ "kept": kept, "removed": removed }))
        }
        "mapping" => {
            let left = widget["left"].as_array()?;
            let mappings: Vec<Value> = left
                .iter()
                .enumerate()
                .filter_map(|(i, item)| {
                    let right = content.get(&format!("map.{i}"))?.as_str()?;
                    (!right.is_empty()).then(|| json!({ "left": item["id"], "right": right }))
                })
                .collect();
            Some(json!({ "mappings": mappings }))
        }
        _ => None,
    }
}
