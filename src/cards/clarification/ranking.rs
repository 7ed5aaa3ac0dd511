//! The card's part of a `ranking` widget (`templates/widgets/clarification/ranking.html`).

use askama::Template;
use serde_json::Value;
use widgetd_domain::widgets::kinds::clarification::ranking::*;

use super::{Mode, Part};
use crate::cards::{self};
use widgetd_domain::Result;

pub(super) fn render(params: &RankingWidget, part: &Part<'_>) -> Result<String> {
    let view = |i: usize| {
        let item = &params.items[i];
        ItemView {
            index: i,
            label: item.label.clone(),
            description: item.description.clone(),
            input_id: format!("w-{}-i{i}", part.id),
        }
    };
    let by_id = |id: &Value| {
        id.as_str()
            .and_then(|id| params.items.iter().position(|i| i.id == id))
            .map(view)
    };
    let ids = |v: &Value| -> Vec<ItemView> {
        v.as_array()
            .map(|a| a.iter().filter_map(by_id).collect())
            .unwrap_or_default()
    };
    let answered = match part.mode {
        Mode::Answered(structured) if params.tiers.is_some() => {
            let mut groups: Vec<(String, Vec<ItemView>)> = params
                .tiers()
                .iter()
                .map(|t| (t.clone(), ids(&structured["tiers"][t])))
                .collect();
            groups.push(("Not placed".into(), ids(&structured["unassigned"])));
            Some(groups)
        }
        Mode::Answered(structured) => Some(vec![(String::new(), ids(&structured["ranked"]))]),
        _ => None,
    };
    cards::render(&RankingPart {
        form: matches!(part.mode, Mode::Form),
        id: part.id,
        items: (0..params.items.len()).map(view).collect(),
        tiers: params.tiers().to_vec(),
        positions: (1..=params.items.len()).collect(),
        answered,
    })
}

struct ItemView {
    index: usize,
    label: String,
    description: Option<String>,
    input_id: String,
}

#[derive(Template)]
#[template(path = "widgets/clarification/ranking.html")]
struct RankingPart<'a> {
    /// The controls (else a read-only list, or the answer).
    form: bool,
    id: &'a str,
    items: Vec<ItemView>,
    /// The tier names (none: a plain ranking).
    tiers: Vec<String>,
    /// 1 to the number of items, the options of a position select.
    positions: Vec<usize>,
    /// Once answered: the items in order (one unnamed group), or per tier
    /// and "Not placed".
    answered: Option<Vec<(String, Vec<ItemView>)>>,
}
