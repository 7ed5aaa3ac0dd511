//! `request_approval`: the agent asks before running a tool. The person
//! answers Deny (optionally saying why), Once, or Always; "Always" keeps a
//! rule, per session creator, tool and exact input, that approves later
//! identical requests at once until it is revoked.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::SqliteConnection;

use crate::clock;
use crate::error::{AppError, AppResult};
use crate::ids::UserId;

/// Kind name of approval widgets.
pub const APPROVAL: &str = "approval";

const MAX_TOOL_CHARS: usize = 100;
const MAX_INPUT_BYTES: usize = 16 * 1024;
const MAX_REASON_CHARS: usize = 500;

/// The arguments of `request_approval`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestApprovalInput {
    /// The tool you want to run, e.g. "Bash" or "write_file" (1 to 100 characters).
    pub tool: String,
    /// Its input, exactly as you would pass it (any JSON, at most 16 KiB).
    /// `{"command": "…"}` is shown as a shell command, `{"path": "…"}` as a path.
    pub input: Value,
    /// Why you want to run it (at most 500 characters).
    #[serde(default)]
    pub reason: Option<String>,
    /// As for `ask_user`: wait up to this many seconds (at most 300) for the decision.
    #[serde(default)]
    pub wait_seconds: Option<u64>,
}

/// A validated approval request, as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ApprovalParams {
    pub tool: String,
    pub input: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// How the input is shown to the person deciding.
pub enum InputDisplay {
    Command(String),
    Path(String),
    Json(String),
}

impl ApprovalParams {
    pub fn parse(input: &RequestApprovalInput) -> AppResult<Self> {
        let tool = input.tool.trim();
        if tool.is_empty()
            || tool.chars().count() > MAX_TOOL_CHARS
            || tool.chars().any(char::is_control)
        {
            return Err(AppError::invalid(
                "invalid_tool",
                format!("`tool` needs 1 to {MAX_TOOL_CHARS} characters, no control characters"),
            ));
        }
        let size = input.input.to_string().len();
        if size > MAX_INPUT_BYTES {
            return Err(AppError::invalid(
                "input_too_large",
                format!("`input` is {size} bytes as JSON; the limit is {MAX_INPUT_BYTES}"),
            ));
        }
        if let Some(reason) = &input.reason
            && reason.chars().count() > MAX_REASON_CHARS
        {
            return Err(AppError::invalid(
                "invalid_reason",
                format!("`reason` has at most {MAX_REASON_CHARS} characters"),
            ));
        }
        super::check_wait(input.wait_seconds)?;
        Ok(Self {
            tool: tool.to_owned(),
            input: input.input.clone(),
            reason: input.reason.clone(),
        })
    }

    /// The input as one canonical string (object keys sorted), the pattern
    /// an "Always" rule matches.
    pub fn canonical_input(&self) -> String {
        self.input.to_string()
    }

    /// A shell command as a command, a path as a path, anything else as JSON.
    pub fn display(&self) -> InputDisplay {
        let field = |name: &str| {
            self.input
                .get(name)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        if let Some(command) = field("command").or_else(|| field("cmd")) {
            return InputDisplay::Command(command);
        }
        if let Some(path) = field("path").or_else(|| field("file_path")) {
            return InputDisplay::Path(path);
        }
        InputDisplay::Json(serde_json::to_string_pretty(&self.input).unwrap_or_default())
    }

    /// The input's other fields, as JSON, when a command or path is shown on
    /// its own: "Always" covers the whole input, so all of it is shown.
    pub fn rest(&self) -> Option<String> {
        let Value::Object(map) = &self.input else {
            return None;
        };
        let shown = match self.display() {
            InputDisplay::Command(_) => ["command", "cmd"],
            InputDisplay::Path(_) => ["path", "file_path"],
            InputDisplay::Json(_) => return None,
        };
        let rest: serde_json::Map<String, Value> = map
            .iter()
            .filter(|(k, _)| !shown.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        (!rest.is_empty())
            .then(|| serde_json::to_string_pretty(&Value::Object(rest)).unwrap_or_default())
    }
}

/// The person's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Deny,
    Once,
    Always,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Deny => "deny",
            Self::Once => "once",
            Self::Always => "always",
        }
    }
}

/// Reads `decision` (deny, once, always) and an optional deny `reason`.
pub fn parse_decision(fields: &[(String, String)]) -> AppResult<(Decision, Option<String>)> {
    let field = |name: &str| {
        fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let decision = match field("decision") {
        Some("deny") => Decision::Deny,
        Some("once") => Decision::Once,
        Some("always") => Decision::Always,
        _ => {
            return Err(AppError::invalid(
                "invalid_decision",
                "`decision` is `deny`, `once` or `always`",
            ));
        }
    };
    let reason = field("reason")
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(str::to_owned);
    if let Some(r) = &reason
        && r.chars().count() > MAX_REASON_CHARS
    {
        return Err(AppError::invalid(
            "invalid_reason",
            format!("a reason has at most {MAX_REASON_CHARS} characters"),
        ));
    }
    Ok((decision, reason.filter(|_| decision == Decision::Deny)))
}

/// A standing "Always" approval.
#[derive(Debug, Serialize, sqlx::FromRow)]
pub struct ApprovalRule {
    pub id: String,
    pub tool: String,
    pub input: String,
    pub created_at: i64,
    pub created_by: String,
}

/// The live rule matching this request, if any.
pub async fn matching_rule(
    conn: &mut SqliteConnection,
    owner: &UserId,
    params: &ApprovalParams,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT id FROM approval_rules WHERE owner_id = ? AND tool = ? AND input = ? AND revoked_at IS NULL")
        .bind(owner)
        .bind(&params.tool)
        .bind(params.canonical_input())
        .fetch_optional(conn)
        .await
}

/// Records an "Always" answer; returns the rule id (an existing live one if any).
pub async fn keep_rule(
    conn: &mut SqliteConnection,
    owner: &UserId,
    by: &UserId,
    params: &ApprovalParams,
) -> sqlx::Result<String> {
    if let Some(id) = matching_rule(conn, owner, params).await? {
        return Ok(id);
    }
    let id = uuid::Uuid::new_v4().to_string();
    sqlx::query("INSERT INTO approval_rules (id, owner_id, tool, input, created_at, created_by) VALUES (?, ?, ?, ?, ?, ?)")
        .bind(&id)
        .bind(owner)
        .bind(&params.tool)
        .bind(params.canonical_input())
        .bind(clock::now_ms())
        .bind(by)
        .execute(conn)
        .await?;
    Ok(id)
}

/// The owner's live rules, newest first.
pub async fn list_rules(
    conn: &mut SqliteConnection,
    owner: &UserId,
) -> AppResult<Vec<ApprovalRule>> {
    Ok(sqlx::query_as(
        "SELECT r.id, r.tool, r.input, r.created_at, u.name AS created_by FROM approval_rules r
         JOIN users u ON u.id = r.created_by WHERE r.owner_id = ? AND r.revoked_at IS NULL ORDER BY r.created_at DESC",
    )
    .bind(owner)
    .fetch_all(conn)
    .await?)
}

/// Revokes one of the owner's live rules; 404 otherwise. Returns its tool.
pub async fn revoke_rule(
    conn: &mut SqliteConnection,
    owner: &UserId,
    id: &str,
) -> AppResult<String> {
    let tool: Option<String> = sqlx::query_scalar(
        "UPDATE approval_rules SET revoked_at = ? WHERE id = ? AND owner_id = ? AND revoked_at IS NULL RETURNING tool",
    )
    .bind(clock::now_ms())
    .bind(id)
    .bind(owner)
    .fetch_optional(conn)
    .await?;
    tool.ok_or(AppError::NotFound("approval rule"))
}

/// The result of a decision, as the agent and the transcript see it.
pub fn result(decision: Decision, reason: Option<&str>, by: &str, rule: Option<&str>) -> Value {
    let mut result = json!({ "decision": decision.as_str(), "answered_by": by });
    if let Some(reason) = reason {
        result["reason"] = json!(reason);
    }
    if let Some(rule) = rule {
        result["rule_id"] = json!(rule);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(tool: &str, input: Value) -> RequestApprovalInput {
        RequestApprovalInput {
            tool: tool.into(),
            input,
            reason: None,
            wait_seconds: None,
        }
    }

    #[test]
    fn inputs_are_shown_by_what_they_are_and_matched_canonically() {
        let cmd =
            ApprovalParams::parse(&input("Bash", json!({ "command": "rm -rf build" }))).unwrap();
        assert!(matches!(cmd.display(), InputDisplay::Command(c) if c == "rm -rf build"));
        let path =
            ApprovalParams::parse(&input("write", json!({ "path": "/etc/hosts", "mode": 1 })))
                .unwrap();
        assert!(matches!(path.display(), InputDisplay::Path(p) if p == "/etc/hosts"));
        let other =
            ApprovalParams::parse(&input("deploy", json!({ "b": 1, "a": [1, 2] }))).unwrap();
        assert!(matches!(other.display(), InputDisplay::Json(_)));
        let reordered =
            ApprovalParams::parse(&input("deploy", json!({ "a": [1, 2], "b": 1 }))).unwrap();
        assert_eq!(other.canonical_input(), reordered.canonical_input());
    }

    #[test]
    fn bad_requests_and_decisions_have_codes() {
        let code = |r: AppResult<ApprovalParams>| match r {
            Err(AppError::Invalid { code, .. }) => code,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            code(ApprovalParams::parse(&input(" ", json!({})))),
            "invalid_tool"
        );
        assert_eq!(
            code(ApprovalParams::parse(&input(
                "t",
                json!({ "x": "y".repeat(17_000) })
            ))),
            "input_too_large"
        );
        let f = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Vec<_>>()
        };
        assert!(matches!(
            parse_decision(&f(&[("decision", "maybe")])),
            Err(AppError::Invalid {
                code: "invalid_decision",
                ..
            })
        ));
        assert_eq!(
            parse_decision(&f(&[("decision", "deny"), ("reason", " too risky ")])).unwrap(),
            (Decision::Deny, Some("too risky".into()))
        );
        assert_eq!(
            parse_decision(&f(&[("decision", "once"), ("reason", "ignored")])).unwrap(),
            (Decision::Once, None)
        );
    }
}
