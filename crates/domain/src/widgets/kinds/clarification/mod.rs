//! `request_clarification`: the agent asks a question (the *why*) with a
//! widget that fits the ambiguity it faces (the *how*): a `choice` today,
//! each type a small module plugged in through [`types`]. Every answer is
//! `{structured, freeform}`: the free-text box is always there and may be
//! used alone, with the widget, or not at all. Answers are not secrets:
//! they go back to the agent in the resume prompt, bounded in length.

pub mod annotation;
pub mod choice;
pub mod curation;
pub mod image;
pub mod items;
pub mod mapping;
pub mod ranking;
pub mod registry;
pub mod table;
pub mod tree;
pub mod types;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::input::parse_json;
use crate::widgets::engine::badge::{Badge, answered_by};
use crate::widgets::engine::kind::{AnswerBody, Answering, Kind, Request};
use crate::widgets::engine::row::WidgetStatus;
use crate::widgets::engine::text::{self, TextRules};
use types::{AnyType, Source};

pub use choice::{Choice, ChoiceAnswer, ChoiceOption, ChoiceWidget};
pub use curation::{Curation, CurationWidget};
pub use ranking::{Ranking, RankingWidget};
pub use table::{Table, TableWidget};
pub use types::{ClarificationType, Structured};

const MAX_QUESTION_CHARS: usize = 1000;
/// Most characters of the free-text answer.
pub const MAX_FREEFORM_CHARS: usize = 4000;
/// Most characters of `structured` (as compact JSON) a resume prompt holds;
/// past it the prompt says how long it was and where to read it.
pub const MAX_PROMPT_STRUCTURED_CHARS: usize = 4000;

/// The rules of the free-text answer.
const FREEFORM: TextRules = TextRules {
    what: "the free-text answer",
    max_chars: MAX_FREEFORM_CHARS,
    too_long: "freeform_too_long",
    invalid: "invalid_freeform",
};

/// The arguments of `request_clarification`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClarificationInput {
    /// Why you ask: the ambiguity you face, as a question to the user (1 to
    /// 1000 characters of plain text).
    pub question: String,
    /// How the user answers: the widget that fits the ambiguity, chosen by
    /// its `type`. The user can always answer in their own words as well,
    /// or instead.
    #[schemars(with = "registry::WidgetSchema")]
    pub widget: Value,
    /// Wait up to this many seconds (at most 300) for the answer and return
    /// it; past that the call returns `pending` and the answer arrives as a
    /// queued prompt. Default 0: return at once.
    #[serde(default)]
    pub wait_seconds: Option<u64>,
}

/// A validated clarification, as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClarificationParams {
    pub question: String,
    /// The type's validated widget, with its `type`.
    pub widget: Value,
}

impl ClarificationParams {
    /// The widget's type and its params (without `type`); a type this
    /// version does not know (written by a newer one) is `unsupported_widget`.
    pub fn stored_type(&self) -> Result<(&'static dyn AnyType, Value)> {
        let mut widget = self.widget.clone();
        let name = widget.as_object_mut().and_then(|m| m.remove("type"));
        let ty = name
            .as_ref()
            .and_then(Value::as_str)
            .and_then(registry::find);
        let ty = ty.ok_or_else(|| {
            Error::invalid(
                "unsupported_widget",
                "this version of widgetd cannot handle this clarification's widget type",
            )
        })?;
        Ok((ty, widget))
    }
}

fn check_question(question: &str) -> Result<String> {
    let question = question.trim();
    let len = question.chars().count();
    if !(1..=MAX_QUESTION_CHARS).contains(&len) {
        return Err(Error::invalid(
            "invalid_question",
            format!("`question` needs 1 to {MAX_QUESTION_CHARS} characters; it has {len}"),
        ));
    }
    if question
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return Err(Error::invalid(
            "invalid_question",
            "`question` is plain text: no control characters but line breaks and tabs",
        ));
    }
    Ok(question.to_owned())
}

/// The clarification kind and its request, `request_clarification`.
pub struct Clarification;

impl Request for Clarification {
    type Kind = Self;
    const NAME: &'static str = "clarification";
    type Input = ClarificationInput;

    fn parse(input: ClarificationInput) -> Result<ClarificationParams> {
        let question = check_question(&input.question)?;
        let (ty, widget) = registry::split(input.widget)?;
        let widget = registry::with_type(ty, ty.parse(widget)?);
        Ok(ClarificationParams { question, widget })
    }

    fn wait_seconds(input: &ClarificationInput) -> Option<u64> {
        input.wait_seconds
    }
}

/// An answer as it arrived.
pub enum ClarificationAnswer {
    /// The form: the type's fields and `freeform`.
    Form(Vec<(String, String)>),
    /// `{"structured"?, "freeform"?}`.
    Json(AnswerJson),
}

/// The JSON answer.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerJson {
    /// The widget's state; left out: untouched.
    #[serde(default)]
    structured: Option<Value>,
    #[serde(default)]
    freeform: Option<String>,
}

impl Kind for Clarification {
    const NAMES: &'static [&'static str] = &[Self::NAME];
    type Params = ClarificationParams;
    type Answer = ClarificationAnswer;

    fn read(body: AnswerBody) -> Result<ClarificationAnswer> {
        match body {
            AnswerBody::Json(body) => Ok(ClarificationAnswer::Json(parse_json(&body)?)),
            form => Ok(ClarificationAnswer::Form(form.plain_fields()?)),
        }
    }

    /// The widget's state and the free text; at least one must say
    /// something (`answer_required`), and neither may hold a stored value.
    async fn apply(
        cx: &mut Answering<'_>,
        params: &ClarificationParams,
        answer: ClarificationAnswer,
    ) -> Result<Value> {
        let (ty, widget) = params.stored_type()?;
        let (freeform, source) = match &answer {
            ClarificationAnswer::Form(fields) => {
                let typed = fields.iter().find(|(k, _)| k == "freeform");
                (typed.map(|(_, v)| v.clone()), Source::Form(fields))
            }
            ClarificationAnswer::Json(json) => {
                (json.freeform.clone(), Source::Json(json.structured.clone()))
            }
        };
        let freeform = match freeform {
            Some(raw) => text::plain_text(&raw, &FREEFORM)?,
            None => None,
        };
        let structured = ty.structured(&widget, source)?;
        if !structured.used && freeform.is_none() {
            return Err(Error::invalid(
                "answer_required",
                "use the widget or type an answer (or dismiss the question)",
            ));
        }
        let mut texts: Vec<&str> = structured.typed.iter().map(String::as_str).collect();
        texts.extend(freeform.as_deref());
        cx.refuse_secrets(&texts).await?;
        Ok(serde_json::json!({
            "structured": structured.value,
            "freeform": freeform.unwrap_or_default(),
            "answered_by": cx.by,
        }))
    }

    fn prompt(tag: &str, params: &ClarificationParams, to: WidgetStatus, result: &Value) -> String {
        let structured = &result["structured"];
        let compact = params
            .stored_type()
            .and_then(|(ty, widget)| ty.compact(&widget, structured))
            .unwrap_or_else(|_| structured.clone());
        let freeform = result["freeform"].as_str().unwrap_or_default();
        prompt(tag, &params.question, to, &compact, freeform)
    }

    fn subject(_: &ClarificationParams) -> String {
        "Question".to_owned()
    }

    fn answered_badge(
        _: &ClarificationParams,
        _: WidgetStatus,
        result: &Value,
        when: &str,
    ) -> Badge {
        answered_by(result, when)
    }

    fn public_params(params: &mut Value) {
        let Some(widget) = params.get_mut("widget") else {
            return;
        };
        let ty = widget
            .get("type")
            .and_then(Value::as_str)
            .and_then(registry::find);
        if let Some(ty) = ty {
            ty.public(widget);
        }
    }
}

/// The image of an `annotation` clarification stored as `params` (a
/// `widgets.params` of kind `kind`): its checked content type and bytes.
pub fn annotation_image(kind: &str, params: &str) -> Option<(String, Vec<u8>)> {
    if kind != Clarification::NAME {
        return None;
    }
    let params: ClarificationParams = serde_json::from_str(params).ok()?;
    if params.widget["type"] != <annotation::Annotation as types::ClarificationType>::TYPE {
        return None;
    }
    annotation::image_of(&serde_json::from_value(params.widget).ok()?)
}

/// `structured` as the prompt carries it: compact JSON, or past
/// [`MAX_PROMPT_STRUCTURED_CHARS`] a JSON string saying how long it was and
/// where to read it whole.
fn bounded(compact: &Value) -> String {
    let text = compact.to_string();
    let chars = text.chars().count();
    if chars <= MAX_PROMPT_STRUCTURED_CHARS {
        return text;
    }
    Value::from(format!(
        "left out: {chars} characters, more than a prompt holds; read result.structured with get_widget_status"
    ))
    .to_string()
}

/// The resume prompt of a clarification that reached `status`. The
/// question and the answer are JSON-quoted, so that nothing in them can
/// pass for the prompt's own words.
pub fn prompt(
    tag: &str,
    question: &str,
    status: WidgetStatus,
    compact: &Value,
    freeform: &str,
) -> String {
    let q = Value::from(question);
    let retry = "Do not ask again immediately — decide how to proceed, or move on to other work.";
    match status {
        WidgetStatus::Submitted | WidgetStatus::AlreadyPresent => format!(
            "{tag} User answered your question {q}: {{\"structured\":{},\"freeform\":{}}}",
            bounded(compact),
            Value::from(freeform)
        ),
        WidgetStatus::Dismissed => {
            format!("{tag} User dismissed your question {q} without answering. {retry}")
        }
        WidgetStatus::Expired => format!(
            "{tag} Your question {q} expired before the user answered; no answer was given. {retry}"
        ),
        WidgetStatus::Cancelled => format!(
            "{tag} Your question {q} was cancelled because the session was archived; no answer was given."
        ),
        WidgetStatus::Pending => unreachable!("pending widgets have no resume prompt"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prompts_carry_the_question_and_the_answer_quoted() {
        let q = "Which \"region\"?";
        let answered = prompt(
            "[Agor]",
            q,
            WidgetStatus::Submitted,
            &json!({ "selected": ["EU"] }),
            "EU only,\nfor now",
        );
        assert_eq!(
            answered,
            r#"[Agor] User answered your question "Which \"region\"?": {"structured":{"selected":["EU"]},"freeform":"EU only,\nfor now"}"#
        );
        let none = json!(null);
        assert_eq!(
            prompt("[Agor]", q, WidgetStatus::Dismissed, &none, ""),
            r#"[Agor] User dismissed your question "Which \"region\"?" without answering. Do not ask again immediately — decide how to proceed, or move on to other work."#
        );
        assert!(
            prompt("[X]", q, WidgetStatus::Expired, &none, "").starts_with(
                r#"[X] Your question "Which \"region\"?" expired before the user answered"#
            )
        );
        assert!(
            prompt("[X]", q, WidgetStatus::Cancelled, &none, "")
                .ends_with("was cancelled because the session was archived; no answer was given.")
        );
    }

    #[test]
    fn a_structured_answer_past_the_bound_is_left_out_and_says_where_it_is() {
        let fits = json!({ "selected": ["x".repeat(MAX_PROMPT_STRUCTURED_CHARS - 20)] });
        assert_eq!(bounded(&fits), fits.to_string());
        let big = json!({ "rows": vec!["a cell"; 1000] });
        let chars = big.to_string().chars().count();
        let text = prompt("[Agor]", "Q?", WidgetStatus::Submitted, &big, "ok");
        assert_eq!(
            text,
            format!(
                r#"[Agor] User answered your question "Q?": {{"structured":"left out: {chars} characters, more than a prompt holds; read result.structured with get_widget_status","freeform":"ok"}}"#
            )
        );
    }

    #[test]
    fn questions_and_widget_types_are_checked() {
        let code = |input: Value| match Clarification::parse(serde_json::from_value(input).unwrap())
        {
            Err(Error::Invalid { code, message } | Error::BadRequest { code, message }) => {
                assert!(
                    !message.contains("sorting") && !message.contains("SECRET"),
                    "{message}"
                );
                code
            }
            other => panic!("expected a refusal, got {other:?}"),
        };
        let choice = json!({ "type": "choice", "options": [{ "label": "a" }, { "label": "b" }] });
        let ok = Clarification::parse(
            serde_json::from_value(json!({ "question": " Which? ", "widget": choice })).unwrap(),
        )
        .unwrap();
        assert_eq!(ok.question, "Which?");
        assert_eq!(ok.widget["type"], "choice");
        assert_eq!(ok.widget["multi_select"], false);
        assert_eq!(
            code(json!({ "question": " ", "widget": choice })),
            "invalid_question"
        );
        let long = "q".repeat(1001);
        assert_eq!(
            code(json!({ "question": long, "widget": choice })),
            "invalid_question"
        );
        assert_eq!(
            code(json!({ "question": "a\u{1b}b", "widget": choice })),
            "invalid_question"
        );
        for widget in [
            json!({ "type": "sorting", "items": [] }),
            json!({ "type": "SECRET-type" }),
        ] {
            assert_eq!(
                code(json!({ "question": "Q?", "widget": widget })),
                "unknown_widget_type"
            );
        }
        assert_eq!(
            code(json!({ "question": "Q?", "widget": { "options": [] } })),
            "invalid_body"
        );
        assert_eq!(
            code(json!({ "question": "Q?", "widget": "choice" })),
            "invalid_body"
        );
        let extra = json!({ "type": "choice", "options": [{ "label": "a", "SECRET": 1 }, { "label": "b" }] });
        match Clarification::parse(
            serde_json::from_value(json!({ "question": "Q?", "widget": extra })).unwrap(),
        ) {
            Err(Error::BadRequest {
                code: "invalid_body",
                message,
            }) => {
                assert!(message.contains("(at `widget.options.0`)"), "{message}");
                assert!(!message.contains("SECRET"), "{message}");
            }
            other => panic!("expected invalid_body, got {other:?}"),
        }
    }
}
