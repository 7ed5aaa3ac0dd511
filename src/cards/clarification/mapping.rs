//! The card's part of a `mapping` widget (`templates/widgets/clarification/mapping.html`).

use askama::Template;
use serde_json::Value;
use widgetd_domain::widgets::kinds::clarification::mapping::*;

use super::{Mode, Part};
use crate::cards::{self};
use widgetd_domain::Result;

pub(super) fn render(params: &MappingWidget, part: &Part<'_>) -> Result<String> {
    let answered = match part.mode {
        Mode::Answered(structured) => Some(answered_pairs(params, structured)),
        _ => None,
    };
    let groups = grouped(&params.right);
    let left = params
        .left
        .iter()
        .enumerate()
        .map(|(n, item)| LeftView {
            field: format!("{FIELD}{n}"),
            input_id: format!("w-{}-m{n}", part.id),
            item: item.clone(),
        })
        .collect();
    cards::render(&MappingPart {
        id: part.id,
        form: matches!(part.mode, Mode::Form),
        left,
        right: &params.right,
        groups,
        answered,
        allow_unmapped: params.allow_unmapped,
        allow_many_to_one: params.allow_many_to_one,
    })
}

/// Items by their group, in the order each group first appears; the
/// ungrouped under `None`.
fn grouped(items: &[MappingItem]) -> Vec<(Option<String>, Vec<MappingItem>)> {
    let mut groups: Vec<(Option<String>, Vec<MappingItem>)> = Vec::new();
    for item in items {
        match groups.iter_mut().find(|(g, _)| *g == item.group) {
            Some((_, members)) => members.push(item.clone()),
            None => groups.push((item.group.clone(), vec![item.clone()])),
        }
    }
    groups
}

/// `(left label, right label)` of each left item as answered (`None`: not
/// connected), from `structured` as stored.
fn answered_pairs(params: &MappingWidget, structured: &Value) -> Vec<(String, Option<String>)> {
    let pairs = structured["mappings"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    params
        .left
        .iter()
        .map(|l| {
            let right = pairs
                .iter()
                .find(|p| p["left"] == l.id.as_str())
                .and_then(|p| params.right.iter().find(|r| p["right"] == r.id.as_str()))
                .map(|r| r.label.clone());
            (l.label.clone(), right)
        })
        .collect()
}

struct LeftView {
    field: String,
    input_id: String,
    item: MappingItem,
}

#[derive(Template)]
#[template(path = "widgets/clarification/mapping.html")]
struct MappingPart<'a> {
    /// The widget id: element ids start `w-{id}-`.
    id: &'a str,
    /// The controls (else a read-only view, or the answer).
    form: bool,
    left: Vec<LeftView>,
    right: &'a [MappingItem],
    /// The right items by group, for the selects.
    groups: Vec<(Option<String>, Vec<MappingItem>)>,
    /// Once answered: each left label and the right label it went to.
    answered: Option<Vec<(String, Option<String>)>>,
    allow_unmapped: bool,
    allow_many_to_one: bool,
}
