//! `tree`: the agent gives 1 to 500 nodes `{id, label, parent_id?,
//! metadata?}` and says which edits the person may make: move a node under
//! another (`allow_reparent`), rename (`allow_rename`), delete
//! (`allow_delete`), add (`allow_add`). `structured` is `{"nodes": [...]}`,
//! the tree with the edits applied: the kept nodes in their order, then the
//! added ones.
//!
//! The form has, per node as allowed, a name field `label.N`, a parent
//! select `parent.N` and a delete box `delete.N` (N its position), and
//! three rows to add nodes (`add.K.label`, `add.K.parent`);
//! `static/clarification/tree.js` edits names in place and moves a node by
//! pressing "Move" and then its new parent.

use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::items::{At, check_count, check_id, check_label, check_metadata, check_unique};
use super::types::{ClarificationType, Structured};
use crate::error::{Error, Result};

const MAX_NODES: usize = 500;
/// Rows the form offers to add nodes.
pub const FORM_ADDS: usize = 3;
/// The `tree` type.
pub struct Tree;

/// One node.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TreeNode {
    /// What answers name (1 to 100 characters, one line, unique).
    pub id: String,
    /// What the user sees (1 to 200 characters, one line).
    pub label: String,
    /// The id of the node it sits under; none: a top-level node.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "parentId")]
    pub parent_id: Option<String>,
    /// Facts shown beside the node: at most 20 keys (1 to 40 characters),
    /// each value a string (at most 200 characters, one line), a number or
    /// a boolean.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, Value>,
}

/// A `tree` widget, as the agent sends it and as it is stored.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TreeWidget {
    /// 1 to 500 nodes, parents anywhere in the list, no cycles.
    pub nodes: Vec<TreeNode>,
    /// Whether the user may move a node under another (default false).
    #[serde(default, alias = "allowReparent")]
    pub allow_reparent: bool,
    /// Whether the user may delete nodes (default false).
    #[serde(default, alias = "allowDelete")]
    pub allow_delete: bool,
    /// Whether the user may rename nodes (default false).
    #[serde(default, alias = "allowRename")]
    pub allow_rename: bool,
    /// Whether the user may add nodes (default false).
    #[serde(default, alias = "allowAdd")]
    pub allow_add: bool,
}

/// A node of an answer: metadata may be left out (it cannot change).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerNode {
    pub id: String,
    pub label: String,
    #[serde(default, alias = "parentId")]
    pub parent_id: Option<String>,
    #[serde(default)]
    pub metadata: Option<BTreeMap<String, Value>>,
}

/// The `structured` answer: every node kept or added.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreeAnswer {
    pub nodes: Vec<AnswerNode>,
}

fn not_allowed(code: &'static str, what: &str, flag: &str) -> Error {
    Error::invalid(
        code,
        format!("this tree does not allow {what} (`{flag}` is off)"),
    )
}

/// `422 unknown_parent` or `cycle` unless every parent is a node and
/// following parents always ends at a top-level node.
fn check_shape<'a>(nodes: impl Iterator<Item = (&'a str, Option<&'a str>)> + Clone) -> Result<()> {
    let parents: HashMap<&str, Option<&str>> = nodes.clone().collect();
    for (n, (id, parent)) in nodes.enumerate() {
        if parent.is_some_and(|p| !parents.contains_key(p)) {
            return Err(Error::invalid(
                "unknown_parent",
                format!(
                    "node {} names a parent that is not a node of the tree",
                    n + 1
                ),
            ));
        }
        let mut at = parent;
        let mut steps = 0;
        while let Some(p) = at {
            steps += 1;
            if p == id || steps > parents.len() {
                return Err(Error::invalid(
                    "cycle",
                    format!("node {} is among its own ancestors", n + 1),
                ));
            }
            at = parents[p];
        }
    }
    Ok(())
}

impl ClarificationType for Tree {
    const TYPE: &'static str = "tree";
    type Input = TreeWidget;
    type Params = TreeWidget;
    type Answer = TreeAnswer;

    fn parse(input: TreeWidget) -> Result<TreeWidget> {
        let list = "widget.nodes";
        check_count("nodes_count", list, input.nodes.len(), 1, MAX_NODES)?;
        for (i, node) in input.nodes.iter().enumerate() {
            let at = At { list, n: i + 1 };
            check_id(at, &node.id)?;
            check_label(at, &node.label)?;
            check_metadata(at, &node.metadata)?;
        }
        check_unique(list, input.nodes.iter().map(|n| n.id.as_str()))?;
        check_shape(
            input
                .nodes
                .iter()
                .map(|n| (n.id.as_str(), n.parent_id.as_deref())),
        )?;
        Ok(input)
    }

    fn untouched(params: &TreeWidget) -> TreeAnswer {
        TreeAnswer {
            nodes: params
                .nodes
                .iter()
                .map(|n| AnswerNode {
                    id: n.id.clone(),
                    label: n.label.clone(),
                    parent_id: n.parent_id.clone(),
                    metadata: None,
                })
                .collect(),
        }
    }

    fn from_form(params: &TreeWidget, fields: &[(String, String)]) -> Result<TreeAnswer> {
        form::read(params, fields)
    }

    /// Only the allowed edits; the tree stays a tree. Kept nodes come back
    /// in their order with their metadata, then the added ones.
    fn check(params: &TreeWidget, answer: TreeAnswer) -> Result<Structured> {
        let list = "structured.nodes";
        check_count("nodes_count", list, answer.nodes.len(), 0, MAX_NODES)?;
        check_unique(list, answer.nodes.iter().map(|n| n.id.as_str()))?;
        let before: HashMap<&str, &TreeNode> =
            params.nodes.iter().map(|n| (n.id.as_str(), n)).collect();
        let mut typed = Vec::new();
        let mut changed = false;
        for (i, node) in answer.nodes.iter().enumerate() {
            let at = At { list, n: i + 1 };
            let Some(old) = before.get(node.id.as_str()) else {
                if !params.allow_add {
                    return Err(not_allowed("add_not_allowed", "adding nodes", "allow_add"));
                }
                check_id(at, &node.id)?;
                check_label(at, &node.label)?;
                if node.metadata.as_ref().is_some_and(|m| !m.is_empty()) {
                    return Err(Error::invalid(
                        "metadata_changed",
                        format!("{at} is new: it has no metadata"),
                    ));
                }
                typed.push(node.label.clone());
                changed = true;
                continue;
            };
            if node.label != old.label {
                if !params.allow_rename {
                    return Err(not_allowed(
                        "rename_not_allowed",
                        "renaming nodes",
                        "allow_rename",
                    ));
                }
                check_label(at, &node.label)?;
                typed.push(node.label.clone());
                changed = true;
            }
            if node.parent_id != old.parent_id {
                if !params.allow_reparent {
                    return Err(not_allowed(
                        "reparent_not_allowed",
                        "moving nodes",
                        "allow_reparent",
                    ));
                }
                changed = true;
            }
            if node.metadata.as_ref().is_some_and(|m| *m != old.metadata) {
                return Err(Error::invalid(
                    "metadata_changed",
                    format!("the metadata of {at} cannot change"),
                ));
            }
        }
        let kept: HashMap<&str, &AnswerNode> =
            answer.nodes.iter().map(|n| (n.id.as_str(), n)).collect();
        if params
            .nodes
            .iter()
            .any(|n| !kept.contains_key(n.id.as_str()))
        {
            if !params.allow_delete {
                return Err(not_allowed(
                    "delete_not_allowed",
                    "deleting nodes",
                    "allow_delete",
                ));
            }
            changed = true;
        }
        check_shape(
            answer
                .nodes
                .iter()
                .map(|n| (n.id.as_str(), n.parent_id.as_deref())),
        )?;
        let value = |n: &AnswerNode, metadata: Option<&BTreeMap<String, Value>>| {
            let mut node = json!({ "id": n.id, "label": n.label });
            if let Some(p) = &n.parent_id {
                node["parent_id"] = json!(p);
            }
            if let Some(m) = metadata.filter(|m| !m.is_empty()) {
                node["metadata"] = json!(m);
            }
            node
        };
        let mut nodes: Vec<Value> = params
            .nodes
            .iter()
            .filter_map(|old| {
                kept.get(old.id.as_str())
                    .map(|n| value(n, Some(&old.metadata)))
            })
            .collect();
        nodes.extend(
            answer
                .nodes
                .iter()
                .filter(|n| !before.contains_key(n.id.as_str()))
                .map(|n| value(n, None)),
        );
        Ok(Structured {
            value: json!({ "nodes": nodes }),
            used: changed,
            typed,
        })
    }

    /// Only the edits: `{"renamed": [[id, label]…], "moved": [[id,
    /// parent]…], "deleted": [id…], "added": [[id, label, parent]…]}`
    /// (a parent `null` for the top level).
    fn compact(params: &TreeWidget, structured: &Value) -> Value {
        let after: Vec<&Value> = structured["nodes"]
            .as_array()
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        let find = |id: &str| after.iter().find(|n| n["id"] == id).copied();
        let (mut renamed, mut moved, mut deleted) = (Vec::new(), Vec::new(), Vec::new());
        for old in &params.nodes {
            let Some(new) = find(&old.id) else {
                deleted.push(json!(old.id));
                continue;
            };
            if new["label"] != old.label.as_str() {
                renamed.push(json!([old.id, new["label"]]));
            }
            if new["parent_id"].as_str() != old.parent_id.as_deref() {
                moved.push(json!([old.id, new["parent_id"]]));
            }
        }
        let added: Vec<Value> = after
            .iter()
            .filter(|n| !params.nodes.iter().any(|o| n["id"] == o.id.as_str()))
            .map(|n| json!([n["id"], n["label"], n["parent_id"]]))
            .collect();
        json!({ "renamed": renamed, "moved": moved, "deleted": deleted, "added": added })
    }
}

/// Reading the form.
pub mod form {
    use super::*;

    fn unknown_node() -> Error {
        Error::invalid(
            "unknown_node",
            "a form field names a node that is not in the tree",
        )
    }

    /// The id of the node added by row `k`: `new-K`, made unique against
    /// the tree's ids.
    pub fn added_id(params: &TreeWidget, k: usize) -> String {
        let mut id = format!("new-{}", k + 1);
        while params.nodes.iter().any(|n| n.id == id) {
            id.push('\'');
        }
        id
    }

    /// `label.N`, `parent.N` (empty: top level), `delete.N` (a deleted
    /// node takes its subtree with it), `add.K.label`, `add.K.parent`.
    pub(super) fn read(params: &TreeWidget, fields: &[(String, String)]) -> Result<TreeAnswer> {
        let mut nodes = Tree::untouched(params).nodes;
        let mut deleted = vec![false; nodes.len()];
        let mut adds: BTreeMap<usize, (String, Option<String>)> = BTreeMap::new();
        for (key, value) in fields {
            let Some((what, rest)) = key.split_once('.') else {
                continue;
            };
            if what == "add" {
                let (k, field) = rest.split_once('.').ok_or_else(unknown_node)?;
                let k: usize = k.parse().map_err(|_| unknown_node())?;
                if k >= FORM_ADDS {
                    return Err(unknown_node());
                }
                let row = adds.entry(k).or_default();
                match field {
                    "label" => row.0 = value.trim().to_owned(),
                    "parent" => row.1 = Some(value.clone()).filter(|v| !v.is_empty()),
                    _ => return Err(unknown_node()),
                }
                continue;
            }
            if !matches!(what, "label" | "parent" | "delete") {
                continue;
            }
            let n: usize = rest.parse().map_err(|_| unknown_node())?;
            let node = nodes.get_mut(n).ok_or_else(unknown_node)?;
            match what {
                "label" => node.label = value.trim().to_owned(),
                "parent" => {
                    node.parent_id = Some(value.trim().to_owned()).filter(|v| !v.is_empty())
                }
                _ => deleted[n] = true,
            }
        }
        // A deleted node takes its descendants (by the parents as sent).
        let index: HashMap<String, usize> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id.clone(), i))
            .collect();
        let gone: Vec<bool> = (0..nodes.len())
            .map(|i| {
                let mut at = Some(i);
                for _ in 0..=nodes.len() {
                    let Some(j) = at else { return false };
                    if deleted[j] {
                        return true;
                    }
                    at = nodes[j]
                        .parent_id
                        .as_ref()
                        .and_then(|p| index.get(p).copied());
                }
                false
            })
            .collect();
        let mut kept: Vec<AnswerNode> = nodes
            .into_iter()
            .zip(gone)
            .filter_map(|(n, gone)| (!gone).then_some(n))
            .collect();
        for (k, (label, parent_id)) in adds {
            if !label.is_empty() {
                kept.push(AnswerNode {
                    id: added_id(params, k),
                    label,
                    parent_id,
                    metadata: None,
                });
            }
        }
        Ok(TreeAnswer { nodes: kept })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: &str, parent: Option<&str>) -> TreeNode {
        TreeNode {
            id: id.into(),
            label: format!("L {id}"),
            parent_id: parent.map(str::to_owned),
            metadata: BTreeMap::new(),
        }
    }

    /// root ─ a ─ a1, root ─ b
    fn widget(all: bool) -> TreeWidget {
        TreeWidget {
            nodes: vec![
                node("root", None),
                node("a", Some("root")),
                node("a1", Some("a")),
                node("b", Some("root")),
            ],
            allow_reparent: all,
            allow_delete: all,
            allow_rename: all,
            allow_add: all,
        }
    }

    fn code<T: std::fmt::Debug>(result: Result<T>) -> &'static str {
        match result {
            Err(Error::Invalid { code, .. }) => code,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    fn edit(w: &TreeWidget, change: impl Fn(&mut Vec<AnswerNode>)) -> TreeAnswer {
        let mut answer = Tree::untouched(w);
        change(&mut answer.nodes);
        answer
    }

    #[test]
    fn nodes_have_limits_with_codes() {
        assert!(Tree::parse(widget(false)).is_ok());
        let mut empty = widget(false);
        empty.nodes.clear();
        assert_eq!(code(Tree::parse(empty)), "nodes_count");
        let mut orphan = widget(false);
        orphan.nodes[3].parent_id = Some("nowhere".into());
        assert_eq!(code(Tree::parse(orphan)), "unknown_parent");
        let mut looped = widget(false);
        looped.nodes[0].parent_id = Some("a1".into());
        assert_eq!(code(Tree::parse(looped)), "cycle");
        let mut own = widget(false);
        own.nodes[3].parent_id = Some("b".into());
        assert_eq!(code(Tree::parse(own)), "cycle");
        let mut twice = widget(false);
        twice.nodes[3].id = "a".into();
        assert_eq!(code(Tree::parse(twice)), "duplicate_id");
        let mut meta = widget(false);
        meta.nodes[0]
            .metadata
            .insert("k".into(), json!({ "deep": 1 }));
        assert_eq!(code(Tree::parse(meta)), "invalid_metadata");
        let many: Vec<TreeNode> = (0..501).map(|i| node(&format!("n{i}"), None)).collect();
        assert_eq!(
            code(Tree::parse(TreeWidget {
                nodes: many,
                ..widget(false)
            })),
            "nodes_count"
        );
    }

    #[test]
    fn only_allowed_edits_pass_and_the_tree_stays_a_tree() {
        let fixed = widget(false);
        let s = Tree::check(&fixed, Tree::untouched(&fixed)).unwrap();
        assert!(!s.used);
        assert_eq!(s.value["nodes"].as_array().unwrap().len(), 4);
        let renamed = edit(&fixed, |n| n[1].label = "A".into());
        assert_eq!(code(Tree::check(&fixed, renamed)), "rename_not_allowed");
        let moved = edit(&fixed, |n| n[2].parent_id = Some("b".into()));
        assert_eq!(code(Tree::check(&fixed, moved)), "reparent_not_allowed");
        let deleted = edit(&fixed, |n| {
            n.remove(3);
        });
        assert_eq!(code(Tree::check(&fixed, deleted)), "delete_not_allowed");
        let added = edit(&fixed, |n| {
            n.push(AnswerNode {
                id: "c".into(),
                label: "C".into(),
                parent_id: None,
                metadata: None,
            })
        });
        assert_eq!(code(Tree::check(&fixed, added)), "add_not_allowed");

        let open = widget(true);
        let cycle = edit(&open, |n| n[1].parent_id = Some("a1".into()));
        assert_eq!(code(Tree::check(&open, cycle)), "cycle");
        let orphan = edit(&open, |n| {
            n.remove(1);
        });
        assert_eq!(code(Tree::check(&open, orphan)), "unknown_parent");
        let blank = edit(&open, |n| n[0].label = " ".into());
        assert_eq!(code(Tree::check(&open, blank)), "empty_label");
        let meta = edit(&open, |n| {
            n[0].metadata = Some(BTreeMap::from([("x".into(), json!(1))]))
        });
        assert_eq!(code(Tree::check(&open, meta)), "metadata_changed");

        let all = edit(&open, |n| {
            n[2].parent_id = Some("b".into());
            n[3].label = "Bee".into();
            n.remove(1);
            n.insert(
                0,
                AnswerNode {
                    id: "c".into(),
                    label: "Sea".into(),
                    parent_id: Some("b".into()),
                    metadata: None,
                },
            );
        });
        let s = Tree::check(&open, all).unwrap();
        assert!(s.used);
        assert_eq!(s.typed, ["Sea", "Bee"]);
        assert_eq!(
            s.value,
            json!({ "nodes": [
                { "id": "root", "label": "L root" },
                { "id": "a1", "label": "L a1", "parent_id": "b" },
                { "id": "b", "label": "Bee", "parent_id": "root" },
                { "id": "c", "label": "Sea", "parent_id": "b" },
            ] })
        );
        assert_eq!(
            Tree::compact(&open, &s.value),
            json!({
                "renamed": [["b", "Bee"]],
                "moved": [["a1", "b"]],
                "deleted": ["a"],
                "added": [["c", "Sea", "b"]],
            })
        );
    }

    #[test]
    fn the_form_deletes_subtrees_and_adds_rows() {
        let open = widget(true);
        let fields: Vec<(String, String)> = [
            ("label.3", " Bee "),
            ("parent.3", ""),
            ("delete.1", "1"),
            ("add.0.label", "Sea"),
            ("add.0.parent", "b"),
            ("add.1.label", ""),
            ("add.1.parent", "root"),
            ("freeform", "x"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let answer = Tree::from_form(&open, &fields).unwrap();
        let ids: Vec<&str> = answer.nodes.iter().map(|n| n.id.as_str()).collect();
        assert_eq!(ids, ["root", "b", "new-1"]);
        assert_eq!(answer.nodes[1].label, "Bee");
        assert_eq!(answer.nodes[1].parent_id, None);
        for key in ["label.9", "parent.x", "add.3.label", "add.0.colour"] {
            let fields = [(key.to_owned(), "v".to_owned())];
            assert_eq!(code(Tree::from_form(&open, &fields)), "unknown_node");
        }
    }
}
