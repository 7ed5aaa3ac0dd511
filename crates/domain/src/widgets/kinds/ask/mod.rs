//! Questions: `ask_user` (1–4 questions with 2–4 options each and a free
//! "Other" answer) and the simple one-question widgets of `ask` (buttons,
//! confirm, select, radio, checkbox), one kind with two requests. Answers
//! are not secrets: they go back to the agent in the resume prompt. The
//! agent's input is in `input.rs` and validated in `parse.rs`, answers are
//! read in `answer.rs` (its card is the server's, `src/cards/`).

mod answer;
mod input;
mod parse;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Result;
use crate::widgets::engine::badge::{Badge, answered_by};
use crate::widgets::engine::kind::{AnswerBody, Answering, Kind, Request};
use crate::widgets::engine::row::WidgetStatus;

pub use input::{
    AskInput, AskOption, AskUserInput, LabelledOption, NeboWidget, Question, SimpleItem,
    SimpleKind, SimpleOption,
};

pub(super) const MAX_QUESTIONS: usize = 4;
pub(super) const MAX_QUESTION_CHARS: usize = 500;
pub(super) const MAX_HEADER_CHARS: usize = 12;
pub(super) const MAX_LABEL_CHARS: usize = 80;
pub(super) const MAX_DESCRIPTION_CHARS: usize = 300;
pub(super) const MAX_PREVIEW_CHARS: usize = 4000;
pub(super) const MAX_SIMPLE_OPTIONS: usize = 10;
pub(super) const MAX_SIMPLE_ITEMS: usize = 6;
pub(super) const MAX_ITEM_LABEL_CHARS: usize = 40;
pub(super) const MAX_VALUE_CHARS: usize = 200;
pub(super) const MAX_OTHER_CHARS: usize = 2000;
pub(super) const MAX_AGENT_NAME_CHARS: usize = 60;

/// A validated question widget, as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AskParams {
    pub questions: Vec<Question>,
    /// Rows written before simple widgets kept their kind per question
    /// carry it here, for their one question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simple: Option<SimpleKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Who asks, as wick's `ask_user` names its agent; shown on the card.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_name: Option<String>,
}

impl AskParams {
    /// How `q` is shown: a simple widget's kind, `None` for `ask_user`.
    pub fn kind_of(&self, q: &Question) -> Option<SimpleKind> {
        q.kind.or(self.simple)
    }

    /// The preselected choice of `q`, if any.
    pub fn default_of<'a>(&'a self, q: &'a Question) -> Option<&'a str> {
        q.default.as_deref().or(self.default.as_deref())
    }

    /// Whether `q` takes a typed answer: always for `ask_user`, on request
    /// for simple widgets.
    pub fn freeform(&self, q: &Question) -> bool {
        q.allow_freeform.unwrap_or(self.kind_of(q).is_none())
    }

    /// Whether the form is answered by clicking one button: a single
    /// `confirm` or `buttons` widget without a typed answer.
    pub fn answered_by_button(&self) -> bool {
        match self.questions.as_slice() {
            [q] => {
                matches!(
                    self.kind_of(q),
                    Some(SimpleKind::Buttons | SimpleKind::Confirm)
                ) && !self.freeform(q)
            }
            _ => false,
        }
    }
}

/// The question kind: widgets of `ask_user` and of `ask`.
pub struct Questions;

impl Kind for Questions {
    const NAMES: &'static [&'static str] = &[AskUser::NAME, Ask::NAME];
    type Params = AskParams;
    type Answer = Vec<(String, String)>;

    fn read(body: AnswerBody) -> Result<Self::Answer> {
        body.plain_fields()
    }

    async fn apply(
        cx: &mut Answering<'_>,
        params: &AskParams,
        fields: Self::Answer,
    ) -> Result<Value> {
        let fields = params.value_text_fields(fields);
        let answers = params.answers(&fields)?;
        let typed: Vec<&str> = fields
            .iter()
            .filter(|(k, _)| k.starts_with("other."))
            .map(|(_, v)| v.as_str())
            .collect();
        cx.refuse_secrets(&typed).await?;
        Ok(AskParams::result(&answers, cx.by))
    }

    fn prompt(tag: &str, _: &AskParams, to: WidgetStatus, result: &Value) -> String {
        prompt(tag, to, &result["answers"])
    }

    fn subject(_: &AskParams) -> String {
        "Question".to_owned()
    }

    fn answered_badge(_: &AskParams, _: WidgetStatus, result: &Value, when: &str) -> Badge {
        answered_by(result, when)
    }
}

/// `ask_user`: 1–4 multiple-choice questions.
pub struct AskUser;

impl Request for AskUser {
    type Kind = Questions;
    const NAME: &'static str = "ask_user";
    type Input = AskUserInput;

    fn parse(input: AskUserInput) -> Result<AskParams> {
        AskParams::parse(&input)
    }

    /// wick's one-question `ask_user` has no `questions`: an empty list
    /// stands for it, and `parse` reads its own fields.
    fn normalise(args: &mut serde_json::Map<String, Value>) {
        if args.contains_key("question") && !args.contains_key("questions") {
            args.insert("questions".to_owned(), Value::Array(Vec::new()));
        }
    }

    fn wait_seconds(input: &AskUserInput) -> Option<u64> {
        input.wait_seconds
    }
}

/// `ask`: one simple question, or several answered in one form.
pub struct Ask;

impl Request for Ask {
    type Kind = Questions;
    const NAME: &'static str = "ask";
    type Input = AskInput;

    fn parse(input: AskInput) -> Result<AskParams> {
        AskParams::parse_simple(&input)
    }

    fn wait_seconds(input: &AskInput) -> Option<u64> {
        input.wait_seconds
    }
}

/// The resume prompt of a question widget that reached `status`. The
/// answers (not secrets) go back as JSON keyed by question text.
pub fn prompt(tag: &str, status: WidgetStatus, answers: &Value) -> String {
    let retry = "Do not ask again immediately — decide how to proceed, or move on to other work.";
    match status {
        WidgetStatus::Submitted | WidgetStatus::AlreadyPresent => {
            format!("{tag} User answered: {answers}")
        }
        WidgetStatus::Dismissed => {
            format!("{tag} User dismissed your question without answering. {retry}")
        }
        WidgetStatus::Expired => {
            format!(
                "{tag} Your question expired before the user answered; no answer was given. {retry}"
            )
        }
        WidgetStatus::Cancelled => {
            format!(
                "{tag} Your question was cancelled because the session was archived; no answer was given."
            )
        }
        WidgetStatus::Pending => unreachable!("pending widgets have no resume prompt"),
    }
}

/// A question with these option labels, for tests.
#[cfg(test)]
fn question(q: &str, labels: &[&str], multi: bool) -> Question {
    Question {
        question: q.into(),
        header: "Chip".into(),
        options: labels
            .iter()
            .map(|l| AskOption::plain(l.to_string(), None))
            .collect(),
        multi_select: multi,
        kind: None,
        default: None,
        allow_freeform: None,
    }
}
