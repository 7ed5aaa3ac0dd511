//! `mapping`: the agent gives two lists, `left` and `right` (1 to 200
//! items each, `{id, label, group?}`); the person connects left items to
//! right items, each left item to at most one right item. Several left
//! items may share a right item only with `allow_many_to_one`; a left item
//! may stay unconnected only with `allow_unmapped`. `structured` is
//! `{"mappings": [{"left", "right"}…]}` in the left list's order.
//!
//! The form is a select per left item (named `map.N`, N its position, the
//! value a right id, empty for none); `static/clarification/mapping.js`
//! adds click-to-connect with lines drawn between the two columns.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::items::{At, check_count, check_group, check_id, check_label, check_unique};
use super::types::{ClarificationType, Structured};
use crate::error::{Error, Result};

const MIN_ITEMS: usize = 1;
const MAX_ITEMS: usize = 200;

/// The form field of left item N: `map.N`.
pub const FIELD: &str = "map.";

/// The `mapping` type.
pub struct Mapping;

/// One item of either side.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MappingItem {
    /// What answers name (1 to 100 characters, one line, unique on its side).
    pub id: String,
    /// What the person sees (1 to 200 characters, one line).
    pub label: String,
    /// A heading the item is shown under (1 to 80 characters, one line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

/// A `mapping` widget, as the agent sends it and as it is stored.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MappingWidget {
    /// What is mapped: 1 to 200 items. Each is connected to at most one
    /// right item.
    pub left: Vec<MappingItem>,
    /// What it is mapped to: 1 to 200 items.
    pub right: Vec<MappingItem>,
    /// Whether a left item may stay unconnected (default false: once the
    /// person connects anything, every left item must be connected).
    #[serde(default, alias = "allowUnmapped")]
    pub allow_unmapped: bool,
    /// Whether several left items may connect to the same right item
    /// (default false: each right item takes at most one).
    #[serde(default, alias = "allowManyToOne")]
    pub allow_many_to_one: bool,
}

/// One connection.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pair {
    pub left: String,
    pub right: String,
}

/// The `structured` answer: the connections.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MappingAnswer {
    #[serde(default)]
    pub mappings: Vec<Pair>,
}

fn check_side(list: &str, count_code: &'static str, items: &[MappingItem]) -> Result<()> {
    check_count(count_code, list, items.len(), MIN_ITEMS, MAX_ITEMS)?;
    for (i, item) in items.iter().enumerate() {
        let at = At { list, n: i + 1 };
        check_id(at, &item.id)?;
        check_label(at, &item.label)?;
        check_group(at, item.group.as_deref())?;
    }
    check_unique(list, items.iter().map(|i| i.id.as_str()))
}

fn unknown(side: &str) -> Error {
    Error::invalid(
        "unknown_id",
        format!("a mapping names a {side} id that is not in the widget"),
    )
}

impl ClarificationType for Mapping {
    const TYPE: &'static str = "mapping";
    type Input = MappingWidget;
    type Params = MappingWidget;
    type Answer = MappingAnswer;

    fn parse(input: MappingWidget) -> Result<MappingWidget> {
        check_side("widget.left", "left_count", &input.left)?;
        check_side("widget.right", "right_count", &input.right)?;
        if !input.allow_unmapped && !input.allow_many_to_one && input.left.len() > input.right.len()
        {
            return Err(Error::invalid(
                "mapping_impossible",
                format!(
                    "{} left items cannot each take one of {} right items without `allow_many_to_one` or `allow_unmapped`",
                    input.left.len(),
                    input.right.len()
                ),
            ));
        }
        Ok(input)
    }

    fn untouched(_: &MappingWidget) -> MappingAnswer {
        MappingAnswer::default()
    }

    /// `map.N` = a right id (empty: not connected). A field for a left item
    /// that does not exist is `unknown_id`.
    fn from_form(params: &MappingWidget, fields: &[(String, String)]) -> Result<MappingAnswer> {
        let mut mappings = Vec::new();
        for (key, value) in fields {
            let Some(n) = key.strip_prefix(FIELD) else {
                continue;
            };
            let left = n
                .parse::<usize>()
                .ok()
                .and_then(|n| params.left.get(n))
                .ok_or_else(|| unknown("left"))?;
            if !value.is_empty() {
                mappings.push(Pair {
                    left: left.id.clone(),
                    right: value.clone(),
                });
            }
        }
        Ok(MappingAnswer { mappings })
    }

    /// Ids exist, each left item once, the two rules kept. The pairs come
    /// back in the left list's order.
    fn check(params: &MappingWidget, answer: MappingAnswer) -> Result<Structured> {
        let mut to: Vec<Option<usize>> = vec![None; params.left.len()];
        for pair in &answer.mappings {
            let l = params
                .left
                .iter()
                .position(|i| i.id == pair.left)
                .ok_or_else(|| unknown("left"))?;
            let r = params
                .right
                .iter()
                .position(|i| i.id == pair.right)
                .ok_or_else(|| unknown("right"))?;
            if to[l].is_some_and(|before| before != r) {
                return Err(Error::invalid(
                    "left_mapped_twice",
                    format!("left item {} is connected to two right items", l + 1),
                ));
            }
            to[l] = Some(r);
        }
        if !params.allow_many_to_one {
            let mut taken: Vec<usize> = to.iter().flatten().copied().collect();
            taken.sort_unstable();
            if let Some(w) = taken.windows(2).find(|w| w[0] == w[1]) {
                return Err(Error::invalid(
                    "many_to_one",
                    format!(
                        "right item {} takes several left items; this mapping allows one each",
                        w[0] + 1
                    ),
                ));
            }
        }
        let used = to.iter().any(Option::is_some);
        if used
            && !params.allow_unmapped
            && let Some(l) = to.iter().position(Option::is_none)
        {
            return Err(Error::invalid(
                "unmapped_left",
                format!(
                    "left item {} is not connected; this mapping needs every left item connected",
                    l + 1
                ),
            ));
        }
        let mappings: Vec<Value> = to
            .iter()
            .enumerate()
            .filter_map(|(l, r)| {
                r.map(|r| json!({ "left": params.left[l].id, "right": params.right[r].id }))
            })
            .collect();
        Ok(Structured {
            value: json!({ "mappings": mappings }),
            used,
            typed: Vec::new(),
        })
    }

    /// `{"mappings": [[left, right]…]}`: the same pairs, without their keys.
    fn compact(_: &MappingWidget, structured: &Value) -> Value {
        let pairs: Vec<Value> = structured["mappings"]
            .as_array()
            .map(|a| a.iter().map(|p| json!([p["left"], p["right"]])).collect())
            .unwrap_or_default();
        json!({ "mappings": pairs })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(ids: &[&str]) -> Vec<MappingItem> {
        ids.iter()
            .map(|id| MappingItem {
                id: id.to_string(),
                label: format!("Label {id}"),
                group: None,
            })
            .collect()
    }

    fn widget(left: &[&str], right: &[&str], unmapped: bool, many: bool) -> MappingWidget {
        MappingWidget {
            left: items(left),
            right: items(right),
            allow_unmapped: unmapped,
            allow_many_to_one: many,
        }
    }

    fn code<T: std::fmt::Debug>(result: Result<T>) -> &'static str {
        match result {
            Err(Error::Invalid { code, .. }) => code,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    fn answer(pairs: &[(&str, &str)]) -> MappingAnswer {
        MappingAnswer {
            mappings: pairs
                .iter()
                .map(|(l, r)| Pair {
                    left: l.to_string(),
                    right: r.to_string(),
                })
                .collect(),
        }
    }

    #[test]
    fn sides_have_limits_with_codes() {
        assert!(Mapping::parse(widget(&["a"], &["x"], false, false)).is_ok());
        assert_eq!(
            code(Mapping::parse(widget(&[], &["x"], true, true))),
            "left_count"
        );
        let many: Vec<String> = (0..201).map(|i| format!("r{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(
            code(Mapping::parse(widget(&["a"], &many, true, true))),
            "right_count"
        );
        assert!(Mapping::parse(widget(&["a"], &many[..200], true, true)).is_ok());
        assert_eq!(
            code(Mapping::parse(widget(&["a", "a"], &["x", "y"], true, true))),
            "duplicate_id"
        );
        assert_eq!(
            code(Mapping::parse(widget(&[" "], &["x"], true, true))),
            "empty_id"
        );
        let long = "i".repeat(101);
        assert_eq!(
            code(Mapping::parse(widget(&[&long], &["x"], true, true))),
            "id_too_long"
        );
        assert_eq!(
            code(Mapping::parse(widget(&["a\nb"], &["x"], true, true))),
            "invalid_id"
        );
        let mut labelled = widget(&["a"], &["x"], true, true);
        labelled.right[0].label = "l".repeat(201);
        assert_eq!(code(Mapping::parse(labelled)), "label_too_long");
        let mut grouped = widget(&["a"], &["x"], true, true);
        grouped.left[0].group = Some("g\u{7}".into());
        assert_eq!(code(Mapping::parse(grouped)), "invalid_group");
        // The same id on both sides is fine: they are two lists.
        assert!(Mapping::parse(widget(&["a"], &["a"], false, false)).is_ok());
        assert_eq!(
            code(Mapping::parse(widget(&["a", "b"], &["x"], false, false))),
            "mapping_impossible"
        );
        assert!(Mapping::parse(widget(&["a", "b"], &["x"], false, true)).is_ok());
    }

    #[test]
    fn answers_obey_the_rules_and_come_back_in_left_order() {
        let strict = widget(&["a", "b", "c"], &["x", "y", "z"], false, false);
        let s = Mapping::check(&strict, answer(&[("c", "x"), ("a", "z"), ("b", "y")])).unwrap();
        assert_eq!(
            s.value,
            json!({ "mappings": [
                { "left": "a", "right": "z" },
                { "left": "b", "right": "y" },
                { "left": "c", "right": "x" },
            ] })
        );
        assert!(s.used);
        assert_eq!(
            Mapping::compact(&strict, &s.value),
            json!({ "mappings": [["a", "z"], ["b", "y"], ["c", "x"]] })
        );
        let none = Mapping::check(&strict, Mapping::untouched(&strict)).unwrap();
        assert_eq!(none.value, json!({ "mappings": [] }));
        assert!(!none.used);
        assert_eq!(
            code(Mapping::check(&strict, answer(&[("a", "x")]))),
            "unmapped_left"
        );
        assert_eq!(
            code(Mapping::check(
                &strict,
                answer(&[("a", "x"), ("b", "x"), ("c", "y")])
            )),
            "many_to_one"
        );
        assert_eq!(
            code(Mapping::check(&strict, answer(&[("q", "x")]))),
            "unknown_id"
        );
        assert_eq!(
            code(Mapping::check(&strict, answer(&[("a", "q")]))),
            "unknown_id"
        );
        assert_eq!(
            code(Mapping::check(&strict, answer(&[("a", "x"), ("a", "y")]))),
            "left_mapped_twice"
        );
        let loose = widget(&["a", "b", "c"], &["x"], true, true);
        let s = Mapping::check(&loose, answer(&[("b", "x"), ("a", "x"), ("b", "x")])).unwrap();
        assert_eq!(
            s.value,
            json!({ "mappings": [{ "left": "a", "right": "x" }, { "left": "b", "right": "x" }] })
        );
    }

    #[test]
    fn the_form_is_a_select_per_left_item() {
        let w = widget(&["a", "b"], &["x", "y"], true, false);
        let fields = [
            ("map.0".to_owned(), "y".to_owned()),
            ("map.1".to_owned(), String::new()),
            ("freeform".to_owned(), "map.1".to_owned()),
        ];
        let read = Mapping::from_form(&w, &fields).unwrap();
        assert_eq!(read.mappings.len(), 1);
        assert_eq!(
            (
                read.mappings[0].left.as_str(),
                read.mappings[0].right.as_str()
            ),
            ("a", "y")
        );
        for key in ["map.2", "map.x", "map.-1"] {
            let fields = [(key.to_owned(), "x".to_owned())];
            assert_eq!(code(Mapping::from_form(&w, &fields)), "unknown_id");
        }
    }
}
