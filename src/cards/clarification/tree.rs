//! The card's part of a `tree` widget (`templates/widgets/clarification/tree.html`).

use std::collections::{BTreeMap, HashMap};

use askama::Template;
use serde_json::Value;
use widgetd_domain::widgets::kinds::clarification::items::shown_metadata;
use widgetd_domain::widgets::kinds::clarification::tree::*;

use super::{Mode, Part};
use crate::cards;
use widgetd_domain::Result;

/// Up to this many nodes, a node's parent is a select; past it, a text
/// field for the parent's id (with the ids as suggestions), so that the
/// page stays small.
const MAX_SELECT_NODES: usize = 100;
/// The deepest indentation shown (deeper nodes are shown at this depth).
const MAX_SHOWN_DEPTH: usize = 9;

/// A node as shown: its place in the form, its depth, what changed.
pub(super) struct NodeView {
    pub n: usize,
    pub id: String,
    pub label: String,
    pub parent: String,
    pub depth: usize,
    pub metadata: String,
    /// Once answered: the label it had, if renamed.
    pub renamed_from: Option<String>,
    pub moved: bool,
    pub added: bool,
}

/// `nodes` (id, label, parent) depth first, each parent before its
/// children, siblings in their order.
fn depth_first(nodes: &[(String, String, Option<String>)]) -> Vec<(usize, usize)> {
    let mut order = Vec::with_capacity(nodes.len());
    let ids: HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.0.as_str(), i))
        .collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    let mut roots = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        match n.2.as_deref().and_then(|p| ids.get(p)) {
            Some(&p) => children[p].push(i),
            None => roots.push(i),
        }
    }
    let mut stack: Vec<(usize, usize)> = roots.into_iter().rev().map(|i| (i, 0)).collect();
    while let Some((i, depth)) = stack.pop() {
        order.push((i, depth));
        stack.extend(children[i].iter().rev().map(|&c| (c, depth + 1)));
    }
    order
}

#[derive(Template)]
#[template(path = "widgets/clarification/tree.html")]
struct TreePart<'a> {
    id: &'a str,
    form: bool,
    answered: bool,
    nodes: Vec<NodeView>,
    /// Every node, in the tree's order, for the parent selects.
    all: Vec<(String, String)>,
    selects: bool,
    rename: bool,
    reparent: bool,
    delete: bool,
    adds: Vec<usize>,
    /// Once answered: the labels of the deleted nodes.
    deleted: Vec<String>,
}

fn views(params: &TreeWidget, after: Option<&Value>) -> (Vec<NodeView>, Vec<String>) {
    let metadata: HashMap<&str, &BTreeMap<String, Value>> = params
        .nodes
        .iter()
        .map(|n| (n.id.as_str(), &n.metadata))
        .collect();
    let before: HashMap<&str, &TreeNode> =
        params.nodes.iter().map(|n| (n.id.as_str(), n)).collect();
    let nodes: Vec<(String, String, Option<String>)> = match after {
        Some(structured) => structured["nodes"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|n| {
                        let text = |k: &str| n[k].as_str().map(str::to_owned);
                        (
                            text("id").unwrap_or_default(),
                            text("label").unwrap_or_default(),
                            text("parent_id"),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default(),
        None => params
            .nodes
            .iter()
            .map(|n| (n.id.clone(), n.label.clone(), n.parent_id.clone()))
            .collect(),
    };
    let deleted = match after {
        Some(_) => params
            .nodes
            .iter()
            .filter(|o| !nodes.iter().any(|n| n.0 == o.id))
            .map(|o| o.label.clone())
            .collect(),
        None => Vec::new(),
    };
    let shown = depth_first(&nodes)
        .into_iter()
        .map(|(i, depth)| {
            let (id, label, parent) = &nodes[i];
            let old = before.get(id.as_str());
            NodeView {
                n: i,
                id: id.clone(),
                label: label.clone(),
                parent: parent.clone().unwrap_or_default(),
                depth: depth.min(MAX_SHOWN_DEPTH),
                metadata: metadata
                    .get(id.as_str())
                    .map(|m| shown_metadata(m))
                    .unwrap_or_default(),
                renamed_from: old
                    .filter(|o| after.is_some() && o.label != *label)
                    .map(|o| o.label.clone()),
                moved: old.is_some_and(|o| after.is_some() && o.parent_id != *parent),
                added: old.is_none(),
            }
        })
        .collect();
    (shown, deleted)
}

pub(super) fn render(params: &TreeWidget, part: &Part<'_>) -> Result<String> {
    let after = match part.mode {
        Mode::Answered(structured) => Some(structured),
        _ => None,
    };
    let (nodes, deleted) = views(params, after);
    let form = matches!(part.mode, Mode::Form);
    cards::render(&TreePart {
        id: part.id,
        form,
        answered: after.is_some(),
        nodes,
        all: params
            .nodes
            .iter()
            .map(|n| (n.id.clone(), n.label.clone()))
            .collect(),
        selects: params.nodes.len() <= MAX_SELECT_NODES,
        rename: params.allow_rename,
        reparent: params.allow_reparent,
        delete: params.allow_delete,
        adds: if params.allow_add {
            (0..FORM_ADDS).collect()
        } else {
            Vec::new()
        },
        deleted,
    })
}
