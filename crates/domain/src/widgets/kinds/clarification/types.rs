//! The per-type contract of `request_clarification`: what one `widget.type`
//! declares ([`ClarificationType`]), and how the kind uses a type whose
//! params are stored JSON ([`AnyType`]); the registry of types is
//! `registry.rs`. A type is one small module beside this file
//! (`choice.rs`); everything else — the tool, the question, the free-text
//! box, answers without the widget, dismissal, the prompt and its bound,
//! events, audit — is the clarification kind's (`mod.rs`) or the engine's.
//! `docs/widgets.md` ("Adding a clarification type") walks through one.

use std::marker::PhantomData;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::input::parse_value_at;

/// One `widget.type`: what the agent gives, what the person does with it,
/// and what comes back as `structured`.
pub trait ClarificationType: Send + Sync + 'static {
    /// The `type` value, e.g. `"choice"`.
    const TYPE: &'static str;
    /// The `widget` object the agent sends, without its `type`: its JSON
    /// schema is part of the tool's, so `deny_unknown_fields` at every level.
    type Input: DeserializeOwned + JsonSchema;
    /// The validated widget, as stored in `params.widget` (beside `type`).
    type Params: Serialize + DeserializeOwned;
    /// The `structured` part of an answer as a JSON answer carries it
    /// (`deny_unknown_fields`).
    type Answer: DeserializeOwned;

    /// Validates the agent's widget: every limit a stable code, never
    /// quoting the input.
    fn parse(input: Self::Input) -> Result<Self::Params>;

    /// The widget's state when the person did nothing with it: what a JSON
    /// answer without `structured` means.
    fn untouched(params: &Self::Params) -> Self::Answer;

    /// Reads the widget's own fields of the form (which sends the whole
    /// state of its controls, so partial state is kept when the person
    /// mostly typed). `fields` are all the form's fields but the CSRF token.
    fn from_form(params: &Self::Params, fields: &[(String, String)]) -> Result<Self::Answer>;

    /// Checks an answer against the params (ids exist, what may change did,
    /// limits) and returns `structured` as it is stored and returned. A
    /// refusal has a stable code; nothing is written.
    fn check(params: &Self::Params, answer: Self::Answer) -> Result<Structured>;

    /// What the resume prompt shows of `structured` (all of it unless the
    /// type has a shorter faithful form); the kind bounds its length.
    fn compact(_params: &Self::Params, structured: &Value) -> Value {
        structured.clone()
    }

    /// Takes out of the stored params what the agent's view of the widget
    /// (`get_widget_status`, `GET /api/v1/widgets/{id}`) leaves out, such
    /// as an image's bytes. Default: nothing.
    fn public(_params: &mut Value) {}
}

/// A checked `structured` answer.
#[derive(Debug)]
pub struct Structured {
    /// `structured` as stored, returned and (compacted) prompted.
    pub value: Value,
    /// The person used the widget (picked something): without it and
    /// without free text, the answer is refused as `answer_required`.
    pub used: bool,
    /// Texts the person typed into the widget itself (a renamed node, an
    /// edited cell); like the free text, refused when they hold a stored
    /// value.
    pub typed: Vec<String>,
}

/// Where an answer's `structured` comes from.
pub enum Source<'a> {
    /// The form's fields.
    Form(&'a [(String, String)]),
    /// A JSON answer's `structured`, if it has one.
    Json(Option<Value>),
}

/// A type with its params as stored JSON: what the kind uses.
pub trait AnyType: Sync {
    fn name(&self) -> &'static str;
    /// The agent's `widget` (without `type`) → params as stored (without `type`).
    fn parse(&self, widget: Value) -> Result<Value>;
    fn structured(&self, params: &Value, source: Source<'_>) -> Result<Structured>;
    fn compact(&self, params: &Value, structured: &Value) -> Result<Value>;
    fn public(&self, params: &mut Value);
}

pub(super) struct Entry<T>(PhantomData<fn() -> T>);

impl<T> Entry<T> {
    pub(super) const NEW: Self = Self(PhantomData);
}

/// The params of a stored widget of type `T`.
pub fn stored<T: ClarificationType>(params: &Value) -> Result<T::Params> {
    serde_json::from_value(params.clone()).map_err(|e| {
        Error::Internal(anyhow::anyhow!(
            "a stored `{}` clarification does not read: {e}",
            T::TYPE
        ))
    })
}

impl<T: ClarificationType> AnyType for Entry<T> {
    fn name(&self) -> &'static str {
        T::TYPE
    }

    fn parse(&self, widget: Value) -> Result<Value> {
        let params = T::parse(parse_value_at(widget, "widget")?)?;
        Ok(serde_json::to_value(params).expect("params serialize"))
    }

    fn structured(&self, params: &Value, source: Source<'_>) -> Result<Structured> {
        let params = stored::<T>(params)?;
        let answer = match source {
            Source::Form(fields) => T::from_form(&params, fields)?,
            Source::Json(Some(structured)) => parse_value_at(structured, "structured")?,
            Source::Json(None) => T::untouched(&params),
        };
        T::check(&params, answer)
    }

    fn compact(&self, params: &Value, structured: &Value) -> Result<Value> {
        Ok(T::compact(&stored::<T>(params)?, structured))
    }

    fn public(&self, params: &mut Value) {
        T::public(params);
    }
}
