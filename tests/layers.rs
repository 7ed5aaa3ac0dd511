//! The crates keep their layers: the domain (`widgetd-domain`) reaches no
//! web, MCP or template crate, not even through another crate, and no crate
//! of the workspace depends on the one above it. The compiler keeps a
//! crate's code to what its `Cargo.toml` gives it; this test keeps the
//! `Cargo.toml`s honest, as `cargo metadata` resolves them.

use std::collections::{BTreeSet, HashMap};
use std::process::Command;

use serde_json::Value;

/// Crates the domain must not reach: HTTP serving, MCP, templates.
const NOT_IN_THE_DOMAIN: &[&str] = &[
    "axum",
    "axum-core",
    "hyper",
    "hyper-util",
    "tower",
    "tower-http",
    "tower-sessions",
    "askama",
    "askama_web",
    "rmcp",
];

/// The platform this runs on (`rustc -vV`'s `host`).
fn host() -> String {
    let output = Command::new("rustc")
        .arg("-vV")
        .output()
        .expect("rustc -vV runs");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.lines()
        .find_map(|line| line.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .to_owned()
}

/// `cargo metadata` of the workspace, as resolved for this machine: only
/// this platform's packages, the ones a build here has fetched (offline,
/// the packages of other platforms may be missing).
fn metadata() -> Value {
    let output = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--offline"])
        .args(["--filter-platform", &host()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Every package a package reaches through normal (not dev or build)
/// dependencies, by name.
fn reached(meta: &Value, from: &str) -> BTreeSet<String> {
    let names: HashMap<&str, &str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let nodes: HashMap<&str, Vec<&str>> = meta["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|node| {
            let normal = node["deps"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|dep| {
                    dep["dep_kinds"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|k| k["kind"].is_null())
                })
                .map(|dep| dep["pkg"].as_str().unwrap())
                .collect();
            (node["id"].as_str().unwrap(), normal)
        })
        .collect();
    let start = names
        .iter()
        .find(|(_, name)| **name == from)
        .map(|(id, _)| *id)
        .unwrap_or_else(|| panic!("no package {from}"));
    let mut seen = BTreeSet::new();
    let mut todo = vec![start];
    while let Some(id) = todo.pop() {
        for dep in &nodes[id] {
            if seen.insert(names[dep].to_owned()) {
                todo.push(dep);
            }
        }
    }
    seen
}

#[test]
fn the_domain_reaches_no_web_mcp_or_template_crate() {
    let meta = metadata();
    let reached = reached(&meta, "widgetd-domain");
    assert!(reached.contains("sqlx"), "the scan reads dependencies");
    let found: Vec<&&str> = NOT_IN_THE_DOMAIN
        .iter()
        .filter(|name| reached.contains(**name))
        .collect();
    assert!(
        found.is_empty(),
        "widgetd-domain reaches {found:?}: HTTP, MCP and the pages belong to the server crate"
    );
    assert!(!reached.contains("widgetd") && !reached.contains("widgetd-notify"));
}

#[test]
fn the_notifiers_sit_between_the_domain_and_the_server() {
    let meta = metadata();
    let notify = reached(&meta, "widgetd-notify");
    assert!(notify.contains("widgetd-domain"));
    assert!(!notify.contains("widgetd"));
    for name in ["axum", "rmcp", "askama", "tower-sessions"] {
        assert!(!notify.contains(name), "widgetd-notify reaches {name}");
    }
    let server = reached(&meta, "widgetd");
    assert!(server.contains("widgetd-domain") && server.contains("widgetd-notify"));
}
