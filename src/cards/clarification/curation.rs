//! The card's part of a `curation` widget (`templates/widgets/clarification/curation.html`).

use askama::Template;
use serde_json::Value;
use widgetd_domain::widgets::kinds::clarification::curation::*;

use super::{Mode, Part};
use crate::cards::{self};
use widgetd_domain::Result;

pub(super) fn render(params: &CurationWidget, part: &Part<'_>) -> Result<String> {
    let kept: Vec<bool> = match part.mode {
        Mode::Answered(structured) => {
            let kept: Vec<&str> = structured["kept"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            params
                .items
                .iter()
                .map(|i| kept.contains(&i.id.as_str()))
                .collect()
        }
        _ => vec![params.starts_kept(); params.items.len()],
    };
    let mut groups: Vec<GroupView> = Vec::new();
    for (i, item) in params.items.iter().enumerate() {
        let name = params
            .group_by
            .as_ref()
            .map(|key| shown(item.metadata.get(key)))
            .map(|g| if g.is_empty() { "Other".to_owned() } else { g });
        let view = ItemView {
            index: i,
            label: item.label.clone(),
            cells: params
                .columns
                .iter()
                .map(|c| shown(item.metadata.get(c)))
                .collect(),
            kept: kept[i],
            input_id: format!("w-{}-k{i}", part.id),
        };
        match groups.iter_mut().find(|g| g.name == name) {
            Some(group) => group.items.push(view),
            None => groups.push(GroupView {
                name,
                items: vec![view],
            }),
        }
    }
    // Items without the key go last.
    if let Some(at) = groups
        .iter()
        .position(|g| g.name.as_deref() == Some("Other"))
    {
        let other = groups.remove(at);
        groups.push(other);
    }
    let kept_count = kept.iter().filter(|&&k| k).count();
    cards::render(&CurationPart {
        mode: match part.mode {
            Mode::Form => "form",
            Mode::Waiting => "waiting",
            Mode::Answered(_) => "answered",
        },
        id: part.id,
        searchable: params.searchable,
        columns: params.columns.clone(),
        groups,
        kept_count,
        removed_count: kept.len() - kept_count,
    })
}

struct ItemView {
    index: usize,
    label: String,
    cells: Vec<String>,
    kept: bool,
    input_id: String,
}

struct GroupView {
    /// The group's value (`None`: no grouping).
    name: Option<String>,
    items: Vec<ItemView>,
}

#[derive(Template)]
#[template(path = "widgets/clarification/curation.html")]
struct CurationPart<'a> {
    /// `form`, `waiting` or `answered`.
    mode: &'static str,
    id: &'a str,
    searchable: bool,
    /// The metadata keys shown as columns.
    columns: Vec<String>,
    groups: Vec<GroupView>,
    kept_count: usize,
    removed_count: usize,
}

/// A metadata value as shown and searched.
fn shown(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(true)) => "yes".into(),
        Some(Value::Bool(false)) => "no".into(),
        Some(other @ Value::Number(_)) => other.to_string(),
        _ => String::new(),
    }
}
