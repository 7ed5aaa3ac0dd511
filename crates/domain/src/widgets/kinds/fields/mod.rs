//! `ask_fields`: a question answered by typing, with no options: "What's
//! the staging URL?". One to ten typed fields (text on one line or several,
//! number, integer, boolean, email, URL, date) with `min`/`max`,
//! `pattern`, `required` and a `default`: the types MCP form-mode
//! elicitation allows, so the question maps to a client's form one to one.
//! Answers are not secrets (they go back to the agent), but what a person
//! typed is still refused when it holds one of the creator's stored
//! values. The fields are validated in `spec.rs`, answers checked in
//! `check.rs` (its card is the server's, `src/cards/`).

pub mod check;
pub mod spec;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::input::parse_json;
use crate::widgets::engine::badge::{Badge, answered_by};
use crate::widgets::engine::kind::{AnswerBody, Answering, Kind, Request};
use crate::widgets::engine::row::WidgetStatus;
pub use spec::{Field, FieldInput, FieldType};

const MAX_QUESTION_CHARS: usize = 500;

/// The prefix of a field's name in the page's form: `field.NAME`.
pub const FORM_PREFIX: &str = "field.";

/// The arguments of `ask_fields`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskFieldsInput {
    /// The question (1 to 500 characters), e.g. "What's the staging URL?".
    pub question: String,
    /// 1 to 10 fields the person types into, answered together; the
    /// answers come back keyed by each field's `name`.
    pub fields: Vec<FieldInput>,
    /// As for `ask_user`: wait up to this many seconds (at most 300) for
    /// the answer; default 0, return at once.
    #[serde(default)]
    pub wait_seconds: Option<u64>,
}

/// A validated typed question, as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FieldsParams {
    pub question: String,
    pub fields: Vec<Field>,
}

impl FieldsParams {
    pub fn parse(input: &AskFieldsInput) -> Result<Self> {
        let question = input.question.trim();
        let plain = !question
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t');
        if question.is_empty() || question.chars().count() > MAX_QUESTION_CHARS || !plain {
            return Err(Error::invalid(
                "invalid_question",
                format!("`question` needs 1 to {MAX_QUESTION_CHARS} characters of plain text"),
            ));
        }
        Ok(Self {
            question: question.to_owned(),
            fields: spec::parse_fields(&input.fields)?,
        })
    }
}

/// The JSON answer: `{"answers": {"NAME": value}}`, a value being a
/// string, number, boolean or `null` (nothing typed).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonAnswer {
    answers: Map<String, Value>,
}

/// The answer as field name and text, as a form sends it.
pub type RawAnswers = Vec<(String, String)>;

/// The typed-question kind and its request, `ask_fields`.
pub struct Fields;

impl Request for Fields {
    type Kind = Self;
    const NAME: &'static str = "fields";
    type Input = AskFieldsInput;

    fn parse(input: AskFieldsInput) -> Result<FieldsParams> {
        FieldsParams::parse(&input)
    }

    fn wait_seconds(input: &AskFieldsInput) -> Option<u64> {
        input.wait_seconds
    }
}

impl Kind for Fields {
    const NAMES: &'static [&'static str] = &[Self::NAME];
    type Params = FieldsParams;
    type Answer = RawAnswers;

    fn read(body: AnswerBody) -> Result<RawAnswers> {
        match body {
            AnswerBody::Json(bytes) => {
                let answer: JsonAnswer = parse_json(&bytes)?;
                answer
                    .answers
                    .into_iter()
                    .map(|(name, value)| {
                        let text = match value {
                            Value::String(s) => s,
                            Value::Number(n) => n.to_string(),
                            Value::Bool(b) => b.to_string(),
                            Value::Null => String::new(),
                            _ => {
                                return Err(Error::BadRequest {
                                    code: "invalid_body",
                                    message: "each answer is a string, number, boolean or null"
                                        .into(),
                                });
                            }
                        };
                        Ok((name, text))
                    })
                    .collect()
            }
            form => Ok(form
                .plain_fields()?
                .into_iter()
                .filter_map(|(k, v)| k.strip_prefix(FORM_PREFIX).map(|k| (k.to_owned(), v)))
                .collect()),
        }
    }

    async fn apply(
        cx: &mut Answering<'_>,
        params: &FieldsParams,
        raw: RawAnswers,
    ) -> Result<Value> {
        if let Some(n) = raw
            .iter()
            .position(|(k, _)| !params.fields.iter().any(|f| &f.name == k))
        {
            return Err(Error::invalid(
                "unknown_field",
                format!("answer {} names no field of this question", n + 1),
            ));
        }
        if let Some(n) = (1..raw.len()).find(|&i| raw[..i].iter().any(|(k, _)| k == &raw[i].0)) {
            return Err(Error::invalid(
                "duplicate_field",
                format!(
                    "answer {} names field `{}` a second time; send each field once",
                    n + 1,
                    raw[n].0
                ),
            ));
        }
        let answers = check::answers(&params.fields, &raw)?;
        let typed: Vec<&str> = answers.values().filter_map(Value::as_str).collect();
        cx.refuse_secrets(&typed).await?;
        Ok(serde_json::json!({ "answers": answers, "answered_by": cx.by }))
    }

    fn prompt(tag: &str, params: &FieldsParams, to: WidgetStatus, result: &Value) -> String {
        let question = Value::from(params.question.as_str());
        let retry =
            "Do not ask again immediately — decide how to proceed, or move on to other work.";
        match to {
            WidgetStatus::Submitted | WidgetStatus::AlreadyPresent => {
                format!(
                    "{tag} User answered your question {question}: {}",
                    result["answers"]
                )
            }
            WidgetStatus::Dismissed => {
                format!("{tag} User dismissed your question {question} without answering. {retry}")
            }
            WidgetStatus::Expired => format!(
                "{tag} Your question {question} expired before the user answered; no answer was given. {retry}"
            ),
            WidgetStatus::Cancelled => format!(
                "{tag} Your question {question} was cancelled because the session was archived; no answer was given."
            ),
            WidgetStatus::Pending => unreachable!("pending widgets have no resume prompt"),
        }
    }

    fn subject(_: &FieldsParams) -> String {
        "Question".to_owned()
    }

    fn answered_badge(_: &FieldsParams, _: WidgetStatus, result: &Value, when: &str) -> Badge {
        answered_by(result, when)
    }
}
