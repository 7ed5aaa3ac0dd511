//! `curation`: the agent gives 1 to 500 items (an id, a label, and
//! metadata shown in `columns`), all kept or all removed to start with,
//! optionally grouped by a metadata key; the person ticks what to keep.
//! `structured` is `{"kept": [id…], "removed": [id…]}`, every item in one
//! of the two, in the items' order. The form is a check box per item
//! (`keep`, the item's index); with JavaScript
//! (`static/clarification/curation.js`) a search filters the items as one
//! types and each group has a box that ticks or unticks all of its items.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::items::{self, At};
use super::types::{ClarificationType, Structured};
use crate::error::{Error, Result};
use crate::widgets::engine::text::check_line;

const MAX_ITEMS: usize = 500;
const MAX_METADATA_KEYS: usize = 20;
const MAX_KEY_CHARS: usize = 40;
const MAX_VALUE_CHARS: usize = 200;
const MAX_COLUMNS: usize = 8;

/// The form field of a kept item (its index in `items`), repeated.
const KEEP: &str = "keep";
/// Sent with every form: without it, the check boxes were not there (an
/// answer in words only), and the items are as they started.
const SENT: &str = "keep_sent";

/// The `curation` type.
pub struct Curation;

/// Whether items start kept or removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DefaultState {
    /// Every item starts ticked: the user removes what does not belong.
    #[default]
    #[serde(alias = "all-selected")]
    AllSelected,
    /// No item starts ticked: the user picks what to keep.
    #[serde(alias = "none-selected")]
    NoneSelected,
}

/// One item.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CurationItem {
    /// What the answer names (1 to 100 characters, one line, unique).
    pub id: String,
    /// What the user sees (1 to 200 characters, one line).
    pub label: String,
    /// Facts about the item, shown in `columns` and used by `group_by` and
    /// the search: at most 20 keys (1 to 40 characters), each value a
    /// string (at most 200 characters, one line), a number or a boolean.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, Value>,
}

/// A `curation` widget, as the agent sends it and as it is stored.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CurationWidget {
    /// 1 to 500 items, in the order shown.
    pub items: Vec<CurationItem>,
    /// Metadata keys shown as columns beside the label, in this order (at
    /// most 8, unique).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<String>,
    /// `all_selected` (default: every item starts kept) or `none_selected`.
    #[serde(default, alias = "defaultState")]
    pub default_state: DefaultState,
    /// A metadata key whose values group the items (in order of first
    /// appearance; items without it last, under "Other").
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "groupBy")]
    pub group_by: Option<String>,
    /// Whether the user gets a search box that filters items as they type
    /// (default true).
    #[serde(default = "yes")]
    pub searchable: bool,
}

fn yes() -> bool {
    true
}

/// The `structured` answer: every item's id once, in `kept` or `removed`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CurationAnswer {
    pub kept: Vec<String>,
    pub removed: Vec<String>,
}

const METADATA: [&str; 3] = ["invalid_metadata"; 3];

/// An item: its id and label as every list type checks them (`items.rs`),
/// and its metadata.
fn check_item(n: usize, item: &CurationItem) -> Result<()> {
    let at = At {
        list: "widget.items",
        n,
    };
    items::check_id(at, &item.id)?;
    items::check_label(at, &item.label)?;
    if item.metadata.len() > MAX_METADATA_KEYS {
        return Err(Error::invalid(
            "invalid_metadata",
            format!("item {n} has more than {MAX_METADATA_KEYS} metadata keys"),
        ));
    }
    for (key, value) in &item.metadata {
        let what = format!("a metadata key of item {n}");
        check_line(key, MAX_KEY_CHARS, &what, METADATA)?;
        let what = format!("a metadata value of item {n}");
        match value {
            Value::String(text) if text.is_empty() => {}
            Value::String(text) => check_line(text, MAX_VALUE_CHARS, &what, METADATA)?,
            Value::Number(_) | Value::Bool(_) => {}
            _ => {
                return Err(Error::invalid(
                    "invalid_metadata",
                    format!("{what} is a string, a number or a boolean"),
                ));
            }
        }
    }
    Ok(())
}

impl CurationWidget {
    pub fn starts_kept(&self) -> bool {
        self.default_state == DefaultState::AllSelected
    }

    /// `structured` for the items whose `kept[i]` is set.
    fn split(&self, kept: &[bool]) -> Value {
        let ids = |keep: bool| -> Vec<&str> {
            self.items
                .iter()
                .zip(kept)
                .filter(|(_, k)| **k == keep)
                .map(|(i, _)| i.id.as_str())
                .collect()
        };
        json!({ "kept": ids(true), "removed": ids(false) })
    }
}

impl ClarificationType for Curation {
    const TYPE: &'static str = "curation";
    type Input = CurationWidget;
    type Params = CurationWidget;
    type Answer = CurationAnswer;

    fn parse(input: CurationWidget) -> Result<CurationWidget> {
        let count = input.items.len();
        if !(1..=MAX_ITEMS).contains(&count) {
            return Err(Error::invalid(
                "items_count",
                format!("`widget.items` needs 1 to {MAX_ITEMS} items; it has {count}"),
            ));
        }
        for (i, item) in input.items.iter().enumerate() {
            check_item(i + 1, item)?;
        }
        items::check_unique("widget.items", input.items.iter().map(|i| i.id.as_str()))?;
        if input.columns.len() > MAX_COLUMNS {
            return Err(Error::invalid(
                "columns_count",
                format!("`widget.columns` names at most {MAX_COLUMNS} metadata keys"),
            ));
        }
        for (i, column) in input.columns.iter().enumerate() {
            let what = format!("column {}", i + 1);
            check_line(column, MAX_KEY_CHARS, &what, METADATA)?;
            if input.columns[..i].contains(column) {
                return Err(Error::invalid(
                    "duplicate_column",
                    format!("column {} names the same key as an earlier one", i + 1),
                ));
            }
        }
        if let Some(key) = &input.group_by {
            check_line(key, MAX_KEY_CHARS, "`widget.group_by`", METADATA)?;
        }
        Ok(input)
    }

    fn untouched(params: &CurationWidget) -> CurationAnswer {
        let all = params.items.iter().map(|i| i.id.clone()).collect();
        if params.starts_kept() {
            CurationAnswer {
                kept: all,
                removed: Vec::new(),
            }
        } else {
            CurationAnswer {
                kept: Vec::new(),
                removed: all,
            }
        }
    }

    /// `keep` (an item's index, once per ticked box) and `keep_sent`;
    /// without `keep_sent` the items are as they started.
    fn from_form(params: &CurationWidget, fields: &[(String, String)]) -> Result<CurationAnswer> {
        if !fields.iter().any(|(k, _)| k == SENT) {
            return Ok(Self::untouched(params));
        }
        let mut kept = vec![false; params.items.len()];
        for (name, value) in fields {
            if name != KEEP {
                continue;
            }
            let at = value.parse::<usize>().ok().filter(|&i| i < kept.len());
            let Some(at) = at else {
                return Err(Error::invalid(
                    "unknown_item",
                    "a ticked box names an item the list does not have",
                ));
            };
            kept[at] = true;
        }
        let ids = |keep: bool| {
            params
                .items
                .iter()
                .zip(&kept)
                .filter(|(_, k)| **k == keep)
                .map(|(i, _)| i.id.clone())
                .collect()
        };
        Ok(CurationAnswer {
            kept: ids(true),
            removed: ids(false),
        })
    }

    /// Every item exactly once, in `kept` or in `removed`.
    fn check(params: &CurationWidget, answer: CurationAnswer) -> Result<Structured> {
        let n = params.items.len();
        let mut placed: Vec<Option<bool>> = vec![None; n];
        for (ids, keep) in [(&answer.kept, true), (&answer.removed, false)] {
            for id in ids {
                let Some(at) = params.items.iter().position(|i| i.id == *id) else {
                    return Err(Error::invalid(
                        "unknown_item",
                        "an id in the answer is not one of the items",
                    ));
                };
                if placed[at].replace(keep).is_some() {
                    return Err(Error::invalid(
                        "duplicate_item",
                        "an item appears twice in the answer",
                    ));
                }
            }
        }
        let missing = placed.iter().filter(|p| p.is_none()).count();
        if missing > 0 {
            return Err(Error::invalid(
                "missing_item",
                format!("{missing} of the {n} items are in neither `kept` nor `removed`"),
            ));
        }
        let kept: Vec<bool> = placed.into_iter().map(|p| p == Some(true)).collect();
        Ok(Structured {
            used: kept.iter().any(|&k| k != params.starts_kept()),
            value: params.split(&kept),
            typed: Vec::new(),
        })
    }

    /// The counts, and the shorter of the two lists (the other is every
    /// other item): `{"kept_count", "removed_count", "removed": [id…]}`.
    fn compact(_: &CurationWidget, structured: &Value) -> Value {
        let count = |key: &str| structured[key].as_array().map_or(0, Vec::len);
        let (kept, removed) = (count("kept"), count("removed"));
        let shorter = if removed <= kept { "removed" } else { "kept" };
        json!({
            "kept_count": kept,
            "removed_count": removed,
            shorter: structured[shorter],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widget(value: Value) -> Result<CurationWidget> {
        Curation::parse(serde_json::from_value(value).unwrap())
    }

    fn items(n: usize) -> Value {
        json!(
            (0..n)
                .map(|i| json!({ "id": format!("i{i}"), "label": format!("Item {i}") }))
                .collect::<Vec<_>>()
        )
    }

    fn code<T: std::fmt::Debug>(result: Result<T>) -> &'static str {
        match result {
            Err(Error::Invalid { code, message }) => {
                assert!(!message.contains("SECRET"), "{message}");
                code
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn items_columns_and_metadata_have_limits_with_codes() {
        let w = widget(json!({ "items": items(1) })).unwrap();
        assert!(w.searchable);
        assert_eq!(w.default_state, DefaultState::AllSelected);
        assert!(widget(json!({ "items": items(500) })).is_ok());
        assert_eq!(code(widget(json!({ "items": [] }))), "items_count");
        assert_eq!(code(widget(json!({ "items": items(501) }))), "items_count");
        let with = |change: &dyn Fn(&mut Value)| {
            let mut w = json!({ "items": items(3) });
            change(&mut w);
            widget(w)
        };
        assert_eq!(
            code(with(&|w| w["items"][2]["id"] = json!("i0"))),
            "duplicate_id"
        );
        assert_eq!(
            code(with(&|w| w["items"][2]["id"] = json!("i".repeat(101)))),
            "id_too_long"
        );
        assert_eq!(
            code(with(&|w| w["items"][2]["label"] = json!(""))),
            "empty_label"
        );
        assert_eq!(
            code(with(
                &|w| w["items"][2]["label"] = json!("SECRET".repeat(40))
            )),
            "label_too_long"
        );
        for bad in [
            json!({ "k": [1] }),
            json!({ "k": null }),
            json!({ "": "v" }),
            json!({ "k": "a\nb" }),
        ] {
            assert_eq!(
                code(with(&|w| w["items"][0]["metadata"] = bad.clone())),
                "invalid_metadata"
            );
        }
        let many: BTreeMap<String, Value> = (0..21).map(|i| (format!("k{i}"), json!(i))).collect();
        assert_eq!(
            code(with(&|w| w["items"][0]["metadata"] = json!(many))),
            "invalid_metadata"
        );
        assert!(
            with(&|w| w["items"][0]["metadata"] = json!({ "size": 3, "ok": true, "team": "" }))
                .is_ok()
        );
        let nine: Vec<String> = (0..9).map(|i| format!("k{i}")).collect();
        assert_eq!(code(with(&|w| w["columns"] = json!(nine))), "columns_count");
        assert_eq!(
            code(with(&|w| w["columns"] = json!(["a", "a"]))),
            "duplicate_column"
        );
        assert_eq!(
            code(with(&|w| w["group_by"] = json!(" "))),
            "invalid_metadata"
        );
    }

    #[test]
    fn every_item_is_kept_or_removed_once() {
        let w = widget(json!({ "items": items(3) })).unwrap();
        let answer = |kept: &[&str], removed: &[&str]| {
            Curation::check(
                &w,
                CurationAnswer {
                    kept: ids(kept),
                    removed: ids(removed),
                },
            )
        };
        let s = answer(&["i2", "i0"], &["i1"]).unwrap();
        assert_eq!(s.value, json!({ "kept": ["i0", "i2"], "removed": ["i1"] }));
        assert!(s.used);
        assert!(!answer(&["i0", "i1", "i2"], &[]).unwrap().used);
        assert!(!Curation::check(&w, Curation::untouched(&w)).unwrap().used);
        assert_eq!(code(answer(&["i0"], &["i1"])), "missing_item");
        assert_eq!(code(answer(&["i0", "i1"], &["i1", "i2"])), "duplicate_item");
        assert_eq!(
            code(answer(&["i0", "i1", "i2", "SECRET"], &[])),
            "unknown_item"
        );
        assert_eq!(
            Curation::compact(&w, &s.value),
            json!({ "kept_count": 2, "removed_count": 1, "removed": ["i1"] })
        );
        let none = widget(json!({ "items": items(3), "default_state": "none_selected" })).unwrap();
        let s = Curation::check(&none, Curation::untouched(&none)).unwrap();
        assert!(!s.used);
        assert_eq!(s.value["removed"], json!(["i0", "i1", "i2"]));
        assert_eq!(
            Curation::compact(&none, &s.value),
            json!({ "kept_count": 0, "removed_count": 3, "kept": [] })
        );
    }

    #[test]
    fn the_form_sends_ticked_boxes_and_a_marker() {
        let w = widget(json!({ "items": items(3) })).unwrap();
        let form = |pairs: &[(&str, &str)]| {
            let fields: Vec<(String, String)> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            Curation::from_form(&w, &fields)
        };
        let read = form(&[("keep_sent", "1"), ("keep", "2"), ("freeform", "x")]).unwrap();
        assert_eq!(
            (read.kept, read.removed),
            (ids(&["i2"]), ids(&["i0", "i1"]))
        );
        let read = form(&[("keep_sent", "1")]).unwrap();
        assert_eq!(read.removed.len(), 3);
        let read = form(&[("freeform", "x")]).unwrap();
        assert_eq!(read.kept.len(), 3, "no marker: as it started");
        assert_eq!(
            code(form(&[("keep_sent", "1"), ("keep", "3")])),
            "unknown_item"
        );
        assert_eq!(
            code(form(&[("keep_sent", "1"), ("keep", "x")])),
            "unknown_item"
        );
    }
}
