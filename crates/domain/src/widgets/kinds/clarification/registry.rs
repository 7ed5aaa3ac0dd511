//! The registry of clarification types: every type `request_clarification`
//! takes, found by its name, and the tool schema's view of them.

use schemars::JsonSchema;
use serde_json::{Map, Value};

use super::annotation::Annotation;
use super::choice::Choice;
use super::curation::Curation;
use super::mapping::Mapping;
use super::ranking::Ranking;
use super::table::Table;
use super::tree::Tree;
use super::types::{AnyType, ClarificationType, Entry};
use crate::error::{Error, Result};

/// Every type `request_clarification` takes. A new type is added here and
/// to [`WidgetSchema`].
const TYPES: &[&dyn AnyType] = &[
    &Entry::<Choice>::NEW,
    &Entry::<Table>::NEW,
    &Entry::<Mapping>::NEW,
    &Entry::<Ranking>::NEW,
    &Entry::<Curation>::NEW,
    &Entry::<Tree>::NEW,
    &Entry::<Annotation>::NEW,
];

/// The type named `name`.
pub fn find(name: &str) -> Option<&'static dyn AnyType> {
    TYPES.iter().copied().find(|t| t.name() == name)
}

/// The names of the types, for the refusal of an unknown one.
pub fn names() -> String {
    TYPES
        .iter()
        .map(|t| format!("`{}`", t.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Splits the agent's `widget` object into its type and the rest.
/// `400 invalid_body` if it is not an object with a string `type`, `422
/// unknown_widget_type` (listing the types) for a type that does not exist.
pub fn split(widget: Value) -> Result<(&'static dyn AnyType, Value)> {
    let Value::Object(mut map) = widget else {
        return Err(Error::BadRequest {
            code: "invalid_body",
            message: "wrong type or value: expected an object (at `widget`)".into(),
        });
    };
    let Some(Value::String(name)) = map.remove("type") else {
        return Err(Error::BadRequest {
            code: "invalid_body",
            message: format!("missing field `type`, one of {} (at `widget`)", names()),
        });
    };
    let ty = find(&name).ok_or_else(|| {
        Error::invalid(
            "unknown_widget_type",
            format!("`widget.type` is one of {}", names()),
        )
    })?;
    Ok((ty, Value::Object(map)))
}

/// Params as stored: the type's, with their `type`.
pub fn with_type(ty: &dyn AnyType, params: Value) -> Value {
    let mut map = match params {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    map.insert("type".into(), Value::from(ty.name()));
    Value::Object(map)
}

// `widget` as the tool's schema shows it: one object per type, each with
// its `type` and the type's own fields. Used for the schema only (its doc
// comments are what the agent reads); the input is read by [`split`] and
// the type's `Input`.
/// The widget that fits the ambiguity, by its `type`.
#[derive(JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
#[allow(dead_code)]
pub enum WidgetSchema {
    /// Pick one (or, with `multi_select`, several) of 2 to 10 options.
    Choice(<Choice as ClarificationType>::Input),
    /// Rows under typed columns; the user edits the cells of editable
    /// columns only.
    Table(<Table as ClarificationType>::Input),
    /// Connect each item of `left` to one of `right` (1 to 200 each).
    Mapping(<Mapping as ClarificationType>::Input),
    /// Put 2 to 100 items in order, best first, or, with `tiers`, place
    /// them in tiers.
    Ranking(<Ranking as ClarificationType>::Input),
    /// Prune a list of 1 to 500 items: the user keeps some and removes the
    /// others, with a search and select-all per group.
    Curation(<Curation as ClarificationType>::Input),
    /// Let the user edit a tree of 1 to 500 nodes: move, rename, delete
    /// or add, as allowed.
    Tree(<Tree as ClarificationType>::Input),
    /// Let the user draw on an image (base64 PNG, JPEG or WebP, at most
    /// 2 MiB) with the given tools.
    Annotation(<Annotation as ClarificationType>::Input),
}
