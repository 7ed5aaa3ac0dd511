//! The docs name files that exist: every path under `src/`, `crates/`,
//! `templates/`, `static/`, `migrations/`, `tests/`, `examples/` or
//! `contrib/` that `README.md` or a page of `docs/` names is in the
//! repository. The dated performance journal (`docs/perf-log/`) is history
//! and names files as they were on its dates, so it is left out.

use std::path::{Path, PathBuf};

const ROOTS: &[&str] = &[
    "src/",
    "crates/",
    "templates/",
    "static/",
    "migrations/",
    "tests/",
    "examples/",
    "contrib/",
];

/// The Markdown files whose paths must hold.
fn pages(root: &Path) -> Vec<PathBuf> {
    let mut pages = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.ends_with("perf-log") {
                continue;
            }
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    pages
}

/// The repository paths a text names: a root, then path characters, up
/// to the first character that cannot be part of one. A path with a
/// placeholder in capitals (`templates/widgets/KIND.html`), a glob or a
/// regular expression (`src/api/env\.rs`) is a pattern, not a file. A
/// path that opens a double-quoted string is a value in an example (a JSON
/// label such as `"tests/auth.rs"`), not a file of this repository: the
/// docs name their files in backticks.
fn named_paths(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (i, _) in text.char_indices() {
        let rest = &text[i..];
        let Some(root) = ROOTS.iter().find(|r| rest.starts_with(*r)) else {
            continue;
        };
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || "_-./\"".contains(c)) {
            continue;
        }
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || "_-./".contains(c)))
            .unwrap_or(rest.len());
        let path = rest[..end].trim_end_matches(['.', '/']);
        let pattern = path.len() <= root.len()
            || path.contains("..")
            || rest[end..].starts_with(['*', '{', '<', '\\'])
            || path.split('/').any(|part| {
                let stem = part.split('.').next().unwrap_or_default();
                stem.len() > 1 && stem.chars().all(|c| c.is_ascii_uppercase() || c == '_')
            });
        if !pattern {
            found.push(path.to_owned());
        }
    }
    found
}

#[test]
fn every_path_the_docs_name_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut missing = Vec::new();
    let mut checked = 0;
    for page in pages(root) {
        let text = std::fs::read_to_string(&page).unwrap();
        let shown = page.strip_prefix(root).unwrap().display().to_string();
        for (n, line) in text.lines().enumerate() {
            for path in named_paths(line) {
                checked += 1;
                if !root.join(&path).exists() {
                    missing.push(format!("{shown}:{}: {path}", n + 1));
                }
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} paths found: is the scan broken?"
    );
    assert!(
        missing.is_empty(),
        "the docs name {} paths that do not exist (fix the doc, or the path):\n{}",
        missing.len(),
        missing.join("\n")
    );
}

#[test]
fn the_scan_finds_paths_and_skips_patterns() {
    assert_eq!(
        named_paths("see `src/api/env.rs`, and crates/domain/src/db/."),
        ["src/api/env.rs", "crates/domain/src/db"]
    );
    assert!(named_paths("templates/widgets/KIND.html and static/clarification/TYPE.js").is_empty());
    assert!(named_paths("migrations/sqlite/*.sql, a/src/x.rs").is_empty());
    assert!(named_paths(r"-F '^src/api/mod\.rs:36:35: replace'").is_empty());
    assert_eq!(named_paths("(`tests/api/main.rs`)"), ["tests/api/main.rs"]);
    assert_eq!(
        named_paths(r#"{"label": "tests/auth.rs"}, see `tests/docs.rs`"#),
        ["tests/docs.rs"]
    );
}
