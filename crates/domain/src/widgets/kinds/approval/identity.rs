//! Which fields of a tool call an "Always" rule holds to.
//!
//! An agent's tool call carries fields that say *what* runs and fields that
//! only describe it. Claude Code writes a fresh free-text `description` on
//! every Bash call, so a rule holding to the whole input would almost never
//! match again; a rule that ignored every field but `command` would approve
//! `dangerouslyDisableSandbox: true` or an `env` nobody saw. So per tool a
//! short list of fields is *free* (may differ from what was approved), and
//! every other field — known or not — must equal what was approved.
//!
//! The tools and fields are Claude Code's (tool input schemas of Claude Code
//! 2.1.168, as shipped in its agent SDK 0.3.168): `Bash` {`command`,
//! `timeout`, `description`, `run_in_background`,
//! `dangerouslyDisableSandbox`}, `Write` {`file_path`, `content`}, `Edit`
//! {`file_path`, `old_string`, `new_string`, `replace_all`}, `MultiEdit`
//! {`file_path`, `edits`}, `NotebookEdit` {`notebook_path`, `cell_id`,
//! `new_source`, `cell_type`, `edit_mode`}. MCP tools (`mcp__…`) and every
//! other tool hold to their whole input.

use serde_json::{Map, Value};

/// A tool whose calls are identified by some of their fields.
struct Known {
    tool: &'static str,
    /// The field naming what the call acts on; without it (as a string)
    /// the whole input identifies the call.
    key: &'static str,
    /// Fields that may differ from what was approved.
    free: &'static [&'static str],
    /// Flags whose `false` is their default: `false` and absent are alike.
    off_by_default: &'static [&'static str],
}

// `timeout` stays part of a Bash call's identity: a longer one lets a
// command run to its end where the approved one would have been killed.
const KNOWN: &[Known] = &[
    Known {
        tool: "Bash",
        key: "command",
        free: &["description"],
        off_by_default: &["run_in_background", "dangerouslyDisableSandbox"],
    },
    Known {
        tool: "Write",
        key: "file_path",
        free: &["content"],
        off_by_default: &[],
    },
    Known {
        tool: "Edit",
        key: "file_path",
        free: &["old_string", "new_string", "replace_all"],
        off_by_default: &[],
    },
    Known {
        tool: "MultiEdit",
        key: "file_path",
        free: &["edits"],
        off_by_default: &[],
    },
    Known {
        tool: "NotebookEdit",
        key: "notebook_path",
        free: &["cell_id", "new_source", "cell_type", "edit_mode"],
        off_by_default: &[],
    },
];

fn known(tool: &str, input: &Value) -> Option<&'static Known> {
    KNOWN
        .iter()
        .find(|k| k.tool == tool && input.get(k.key).is_some_and(Value::is_string))
}

/// The fields of `input` that may differ from what an "Always" rule
/// approved (none for tools not listed above).
pub fn free_fields(tool: &str, input: &Value) -> &'static [&'static str] {
    known(tool, input).map_or(&[], |k| k.free)
}

/// The part of `input` an "Always" rule holds to: the input without its
/// free fields, a default-off flag that is `false` dropped.
pub fn identity(tool: &str, input: &Value) -> Value {
    let (Some(known), Value::Object(map)) = (known(tool, input), input) else {
        return input.clone();
    };
    let kept: Map<String, Value> = map
        .iter()
        .filter(|(k, _)| !known.free.contains(&k.as_str()))
        .filter(|(k, v)| !(known.off_by_default.contains(&k.as_str()) && **v == Value::Bool(false)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Value::Object(kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_listed_fields_of_listed_tools_are_free() {
        let bash = json!({ "command": "ls", "description": "List files", "timeout": 5 });
        assert_eq!(
            identity("Bash", &bash),
            json!({ "command": "ls", "timeout": 5 })
        );
        let flags = json!({ "command": "ls", "run_in_background": false, "dangerouslyDisableSandbox": true });
        assert_eq!(
            identity("Bash", &flags),
            json!({ "command": "ls", "dangerouslyDisableSandbox": true })
        );
        let write = json!({ "file_path": "/a", "content": "x", "mode": 1 });
        assert_eq!(
            identity("Write", &write),
            json!({ "file_path": "/a", "mode": 1 })
        );
        assert_eq!(free_fields("Bash", &bash), ["description"]);
        assert_eq!(free_fields("Write", &write), ["content"]);
        assert!(free_fields("Bash", &json!({ "cmd": "ls" })).is_empty());
        assert!(free_fields("mcp__x__y", &bash).is_empty());
        // Other tools, MCP tools, a lower-case name, a call without its key:
        // the whole input.
        for (tool, input) in [
            ("mcp__x__y", json!({ "command": "ls", "description": "d" })),
            ("bash", json!({ "command": "ls", "description": "d" })),
            ("Bash", json!({ "cmd": "ls", "description": "d" })),
        ] {
            assert_eq!(identity(tool, &input), input, "{tool}");
        }
    }
}
