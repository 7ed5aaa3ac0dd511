//! `ranking`: the agent gives 2 to 100 items, and optionally 2 to 10
//! tiers; the person puts the items in order (`{"ranked": [id…]}`, every
//! item once), or places them in tiers (`{"tiers": {tier: [id…]},
//! "unassigned": [id…]}`). The form has a position select per item
//! (`position.{i}`), or a tier select (`tier.{i}`); with JavaScript
//! (`static/clarification/ranking.js`) items are dragged, or moved with
//! the arrow keys.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::items::{self, At};
use super::types::{ClarificationType, Structured};
use crate::error::{Error, Result};
use crate::widgets::engine::text::check_line;

const MIN_ITEMS: usize = 2;
const MAX_ITEMS: usize = 100;
const MIN_TIERS: usize = 2;
const MAX_TIERS: usize = 10;
/// Most characters of a tier's name.
const MAX_TIER_CHARS: usize = 80;
const MAX_DESCRIPTION_CHARS: usize = 300;

/// The form field of an item's position (1-based), `position.{i}`, `i`
/// being the item's index in `items`.
const POSITION: &str = "position.";
/// The form field of an item's tier (its name; empty: none), `tier.{i}`.
const TIER: &str = "tier.";

/// The `ranking` type.
pub struct Ranking;

/// One item.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RankingItem {
    /// What the answer names (1 to 100 characters, one line, unique).
    pub id: String,
    /// What the user sees (1 to 200 characters, one line).
    pub label: String,
    /// Plain text shown beside the label (at most 300 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A `ranking` widget, as the agent sends it and as it is stored.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RankingWidget {
    /// 2 to 100 items, in the order first shown.
    pub items: Vec<RankingItem>,
    /// 2 to 10 tier names (each 1 to 80 characters, one line, unique),
    /// best first: the user places items in tiers instead of ordering
    /// them all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiers: Option<Vec<String>>,
}

/// The `structured` answer: `ranked` (every item's id once, best first)
/// without tiers; `tiers` (tier name → ids; an item left out is
/// unassigned) with them.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RankingAnswer {
    #[serde(default)]
    pub ranked: Option<Vec<String>>,
    #[serde(default)]
    pub tiers: Option<BTreeMap<String, Vec<String>>>,
}

const LABEL: [&str; 3] = ["empty_label", "label_too_long", "invalid_label"];

/// An item's id and label, as every list type checks them (`items.rs`).
fn check_item(n: usize, item: &RankingItem) -> Result<()> {
    let at = At {
        list: "widget.items",
        n,
    };
    items::check_id(at, &item.id)?;
    items::check_label(at, &item.label)?;
    if item
        .description
        .as_ref()
        .is_some_and(|d| d.chars().count() > MAX_DESCRIPTION_CHARS)
    {
        return Err(Error::invalid(
            "description_too_long",
            format!("the description of item {n} has more than {MAX_DESCRIPTION_CHARS} characters"),
        ));
    }
    Ok(())
}

impl RankingWidget {
    fn index(&self, id: &str) -> Result<usize> {
        self.items.iter().position(|i| i.id == id).ok_or_else(|| {
            Error::invalid(
                "unknown_item",
                "an id in the answer is not one of the items",
            )
        })
    }

    /// The tiers, none when the ranking is a plain order.
    pub fn tiers(&self) -> &[String] {
        self.tiers.as_deref().unwrap_or_default()
    }
}

/// Marks item `at` as placed; `duplicate_item` if it already was.
fn place(seen: &mut [bool], at: usize) -> Result<()> {
    if std::mem::replace(&mut seen[at], true) {
        return Err(Error::invalid(
            "duplicate_item",
            "an item appears twice in the answer",
        ));
    }
    Ok(())
}

/// The order the position selects say, `positions[i]` being item `i`'s
/// (1-based): the items moved take the places picked (two on one place:
/// the first gets it, the other the next free one), and the items not
/// moved fill the other places in their first order. So moving one item
/// never needs the others to be renumbered.
fn by_positions(positions: &[usize]) -> Vec<usize> {
    let n = positions.len();
    let is_moved = |i: usize| positions[i] != i + 1;
    let mut moved: Vec<usize> = (0..n).filter(|&i| is_moved(i)).collect();
    moved.sort_by_key(|&i| (positions[i], i));
    let mut slots: Vec<Option<usize>> = vec![None; n];
    for i in moved {
        let wanted = positions[i] - 1;
        let free = (wanted..n)
            .chain((0..wanted).rev())
            .find(|&s| slots[s].is_none());
        if let Some(at) = free {
            slots[at] = Some(i);
        }
    }
    let mut rest = (0..n).filter(|&i| !is_moved(i));
    slots
        .into_iter()
        .map(|slot| slot.or_else(|| rest.next()))
        .collect::<Option<Vec<usize>>>()
        .expect("n items fill n places")
}

impl ClarificationType for Ranking {
    const TYPE: &'static str = "ranking";
    type Input = RankingWidget;
    type Params = RankingWidget;
    type Answer = RankingAnswer;

    fn parse(input: RankingWidget) -> Result<RankingWidget> {
        let count = input.items.len();
        if !(MIN_ITEMS..=MAX_ITEMS).contains(&count) {
            return Err(Error::invalid(
                "items_count",
                format!("`widget.items` needs {MIN_ITEMS} to {MAX_ITEMS} items; it has {count}"),
            ));
        }
        for (i, item) in input.items.iter().enumerate() {
            check_item(i + 1, item)?;
        }
        items::check_unique("widget.items", input.items.iter().map(|i| i.id.as_str()))?;
        if let Some(tiers) = &input.tiers {
            if !(MIN_TIERS..=MAX_TIERS).contains(&tiers.len()) {
                return Err(Error::invalid(
                    "tiers_count",
                    format!(
                        "`widget.tiers` needs {MIN_TIERS} to {MAX_TIERS} tiers; it has {}",
                        tiers.len()
                    ),
                ));
            }
            for (i, tier) in tiers.iter().enumerate() {
                check_line(tier, MAX_TIER_CHARS, &format!("tier {}", i + 1), LABEL)?;
                if tiers[..i].contains(tier) {
                    return Err(Error::invalid(
                        "duplicate_tier",
                        format!("tier {} has the same name as an earlier one", i + 1),
                    ));
                }
            }
        }
        Ok(input)
    }

    fn untouched(params: &RankingWidget) -> RankingAnswer {
        match params.tiers {
            Some(_) => RankingAnswer {
                ranked: None,
                tiers: Some(BTreeMap::new()),
            },
            None => RankingAnswer {
                ranked: Some(params.items.iter().map(|i| i.id.clone()).collect()),
                tiers: None,
            },
        }
    }

    /// `position.{i}` (1 to n, see [`by_positions`]) or `tier.{i}` (a tier's name; empty: none). An item
    /// without a field keeps its place, or stays unassigned.
    fn from_form(params: &RankingWidget, fields: &[(String, String)]) -> Result<RankingAnswer> {
        let n = params.items.len();
        let field = |name: &str, prefix: &str| -> Result<Option<usize>> {
            let Some(i) = name.strip_prefix(prefix) else {
                return Ok(None);
            };
            match i.parse::<usize>() {
                Ok(i) if i < n => Ok(Some(i)),
                _ => Err(Error::invalid(
                    "unknown_item",
                    "a form field names an item the ranking does not have",
                )),
            }
        };
        if params.tiers.is_some() {
            let mut tiers: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for (name, value) in fields {
                if let Some(i) = field(name, TIER)?
                    && !value.is_empty()
                {
                    let id = params.items[i].id.clone();
                    tiers.entry(value.clone()).or_default().push(id);
                }
            }
            return Ok(RankingAnswer {
                ranked: None,
                tiers: Some(tiers),
            });
        }
        let mut positions: Vec<usize> = (1..=n).collect();
        for (name, value) in fields {
            if let Some(i) = field(name, POSITION)? {
                positions[i] = value
                    .parse()
                    .ok()
                    .filter(|p| (1..=n).contains(p))
                    .ok_or_else(|| {
                        Error::invalid("invalid_position", format!("a position is 1 to {n}"))
                    })?;
            }
        }
        Ok(RankingAnswer {
            ranked: Some(
                by_positions(&positions)
                    .iter()
                    .map(|&i| params.items[i].id.clone())
                    .collect(),
            ),
            tiers: None,
        })
    }

    /// Without tiers: a permutation of exactly the items. With tiers: each
    /// item in at most one tier, tiers that exist.
    fn check(params: &RankingWidget, answer: RankingAnswer) -> Result<Structured> {
        let n = params.items.len();
        let mut seen = vec![false; n];
        match (params.tiers.as_ref(), answer) {
            (
                None,
                RankingAnswer {
                    ranked: Some(ranked),
                    tiers: None,
                },
            ) => {
                let mut order = Vec::with_capacity(n);
                for id in &ranked {
                    let at = params.index(id)?;
                    place(&mut seen, at)?;
                    order.push(at);
                }
                if order.len() != n {
                    return Err(Error::invalid(
                        "missing_item",
                        format!(
                            "`ranked` has {} of the {n} items: rank every item once",
                            order.len()
                        ),
                    ));
                }
                Ok(Structured {
                    used: order.iter().enumerate().any(|(p, &i)| p != i),
                    value: json!({ "ranked": ranked }),
                    typed: Vec::new(),
                })
            }
            (
                Some(names),
                RankingAnswer {
                    ranked: None,
                    tiers: Some(given),
                },
            ) => {
                let mut tiers: BTreeMap<&str, Vec<usize>> =
                    names.iter().map(|t| (t.as_str(), Vec::new())).collect();
                for (tier, ids) in &given {
                    let Some(placed) = tiers.get_mut(tier.as_str()) else {
                        return Err(Error::invalid(
                            "unknown_tier",
                            "a tier in the answer is not one of the tiers",
                        ));
                    };
                    for id in ids {
                        let at = params.index(id)?;
                        place(&mut seen, at)?;
                        placed.push(at);
                    }
                }
                let ids = |mut at: Vec<usize>| -> Vec<&str> {
                    at.sort_unstable();
                    at.iter().map(|&i| params.items[i].id.as_str()).collect()
                };
                let unassigned = ids((0..n).filter(|&i| !seen[i]).collect());
                let tiers: BTreeMap<&str, Vec<&str>> =
                    tiers.into_iter().map(|(t, at)| (t, ids(at))).collect();
                Ok(Structured {
                    used: seen.contains(&true),
                    value: json!({ "tiers": tiers, "unassigned": unassigned }),
                    typed: Vec::new(),
                })
            }
            (None, _) => Err(Error::invalid(
                "ranking_shape",
                "this ranking has no tiers: answer `{\"ranked\": [id…]}`",
            )),
            (Some(_), _) => Err(Error::invalid(
                "ranking_shape",
                "this ranking has tiers: answer `{\"tiers\": {tier: [id…]}}`",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn widget(value: Value) -> Result<RankingWidget> {
        Ranking::parse(serde_json::from_value(value).unwrap())
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

    fn fields(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn items_and_tiers_have_limits_with_codes() {
        assert!(widget(json!({ "items": items(2) })).is_ok());
        assert!(widget(json!({ "items": items(100) })).is_ok());
        assert_eq!(code(widget(json!({ "items": items(1) }))), "items_count");
        assert_eq!(code(widget(json!({ "items": items(101) }))), "items_count");
        let mut bad = items(3);
        bad[2]["id"] = json!("i0");
        assert_eq!(code(widget(json!({ "items": bad }))), "duplicate_id");
        for (id, expected) in [
            ("", "empty_id"),
            (" ", "empty_id"),
            ("a\nb", "invalid_id"),
            (&"i".repeat(101), "id_too_long"),
        ] {
            let mut bad = items(3);
            bad[1]["id"] = json!(id);
            assert_eq!(code(widget(json!({ "items": bad }))), expected);
        }
        let mut bad = items(3);
        bad[1]["label"] = json!("SECRET".repeat(34));
        assert_eq!(code(widget(json!({ "items": bad }))), "label_too_long");
        let mut bad = items(3);
        bad[1]["description"] = json!("d".repeat(301));
        assert_eq!(
            code(widget(json!({ "items": bad }))),
            "description_too_long"
        );
        let tiers = |t: Value| widget(json!({ "items": items(3), "tiers": t }));
        assert!(tiers(json!(["Must", "Nice"])).is_ok());
        assert_eq!(code(tiers(json!(["Must"]))), "tiers_count");
        let eleven: Vec<String> = (0..11).map(|i| format!("t{i}")).collect();
        assert_eq!(code(tiers(json!(eleven))), "tiers_count");
        assert_eq!(code(tiers(json!(["Must", "Must"]))), "duplicate_tier");
        assert_eq!(code(tiers(json!(["Must", " "]))), "empty_label");
    }

    #[test]
    fn a_ranking_is_every_item_once() {
        let r = widget(json!({ "items": items(3) })).unwrap();
        let rank = |ids: &[&str]| {
            Ranking::check(
                &r,
                RankingAnswer {
                    ranked: Some(ids.iter().map(|s| s.to_string()).collect()),
                    tiers: None,
                },
            )
        };
        let s = rank(&["i2", "i0", "i1"]).unwrap();
        assert_eq!(s.value, json!({ "ranked": ["i2", "i0", "i1"] }));
        assert!(s.used);
        assert!(!rank(&["i0", "i1", "i2"]).unwrap().used);
        assert!(!Ranking::check(&r, Ranking::untouched(&r)).unwrap().used);
        assert_eq!(code(rank(&["i0", "i1"])), "missing_item");
        assert_eq!(code(rank(&["i0", "i1", "i1"])), "duplicate_item");
        assert_eq!(code(rank(&["i0", "i1", "SECRET"])), "unknown_item");
        let tiered = RankingAnswer {
            ranked: None,
            tiers: Some(BTreeMap::new()),
        };
        assert_eq!(code(Ranking::check(&r, tiered)), "ranking_shape");
    }

    #[test]
    fn tiers_place_each_item_at_most_once() {
        let r = widget(json!({ "items": items(3), "tiers": ["Must", "Nice"] })).unwrap();
        let tiers = |t: Value| {
            Ranking::check(
                &r,
                RankingAnswer {
                    ranked: None,
                    tiers: Some(serde_json::from_value(t).unwrap()),
                },
            )
        };
        let s = tiers(json!({ "Nice": ["i2", "i0"] })).unwrap();
        assert_eq!(
            s.value,
            json!({ "tiers": { "Must": [], "Nice": ["i0", "i2"] }, "unassigned": ["i1"] })
        );
        assert!(s.used);
        let none = Ranking::check(&r, Ranking::untouched(&r)).unwrap();
        assert!(!none.used);
        assert_eq!(none.value["unassigned"], json!(["i0", "i1", "i2"]));
        assert_eq!(code(tiers(json!({ "SECRET": [] }))), "unknown_tier");
        assert_eq!(
            code(tiers(json!({ "Must": ["i0"], "Nice": ["i0"] }))),
            "duplicate_item"
        );
        assert_eq!(code(tiers(json!({ "Must": ["SECRET"] }))), "unknown_item");
        let ranked = RankingAnswer {
            ranked: Some(vec![]),
            tiers: None,
        };
        assert_eq!(code(Ranking::check(&r, ranked)), "ranking_shape");
    }

    #[test]
    fn the_form_reads_positions_and_tiers() {
        let r = widget(json!({ "items": items(4) })).unwrap();
        let read = |pairs: &[(&str, &str)]| {
            Ranking::from_form(&r, &fields(pairs)).map(|a| a.ranked.unwrap())
        };
        // D moved to 1: it goes first, the others keep their order.
        assert_eq!(
            read(&[("position.3", "1")]).unwrap(),
            ["i3", "i0", "i1", "i2"]
        );
        // A moved down to 3: B and C move up.
        assert_eq!(
            read(&[("position.0", "3")]).unwrap(),
            ["i1", "i2", "i0", "i3"]
        );
        // Two on one place: the first gets it.
        assert_eq!(
            read(&[("position.3", "1"), ("position.2", "1")]).unwrap(),
            ["i2", "i3", "i0", "i1"]
        );
        assert_eq!(
            read(&[
                ("position.0", "3"),
                ("position.1", "2"),
                ("position.2", "1"),
                ("position.3", "4"),
                ("freeform", "x"),
            ])
            .unwrap(),
            ["i2", "i1", "i0", "i3"]
        );
        assert_eq!(read(&[]).unwrap(), ["i0", "i1", "i2", "i3"]);
        assert_eq!(code(read(&[("position.0", "5")])), "invalid_position");
        assert_eq!(code(read(&[("position.0", "x")])), "invalid_position");
        assert_eq!(code(read(&[("position.4", "1")])), "unknown_item");
        let t = widget(json!({ "items": items(3), "tiers": ["Must", "Nice"] })).unwrap();
        let read = Ranking::from_form(
            &t,
            &fields(&[("tier.0", "Nice"), ("tier.1", ""), ("tier.2", "Nice")]),
        )
        .unwrap();
        let s = Ranking::check(&t, read).unwrap();
        assert_eq!(s.value["tiers"]["Nice"], json!(["i0", "i2"]));
        let read = Ranking::from_form(&t, &fields(&[("tier.0", "SECRET")])).unwrap();
        assert_eq!(code(Ranking::check(&t, read)), "unknown_tier");
    }
}
