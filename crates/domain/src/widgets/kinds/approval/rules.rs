//! Standing "Always" rules: kept for the session's creator, a tool and the
//! call's identifying fields (or a command pattern), for all of the
//! creator's sessions or for one session only; matched, listed and
//! revoked here.

use serde::Serialize;
use serde_json::{Value, json};
use sqlx::AnyConnection;

use super::ApprovalParams;
use super::pattern::stored_pattern_rule;
use crate::clock;
use crate::error::{Error, Result};
use crate::ids::{SessionId, UserId};

/// Where an "Always" rule applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RuleScope {
    /// Only the session it was given in.
    Session,
    /// Every session of the creator (what a decision without a scope keeps,
    /// as before scopes existed).
    #[default]
    All,
}

impl RuleScope {
    pub fn parse(text: &str) -> Result<Self> {
        match text {
            "session" => Ok(Self::Session),
            "all" => Ok(Self::All),
            _ => Err(Error::invalid(
                "invalid_scope",
                "`scope` is `session` (this session only) or `all` (all of the creator's sessions)",
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Session => "session",
            Self::All => "all",
        }
    }
}

/// A standing "Always" approval.
#[derive(Debug, Serialize, sqlx::FromRow)]
pub struct ApprovalRule {
    pub id: String,
    pub tool: String,
    /// `exact` (`input` is the canonical JSON of the identifying fields)
    /// or `pattern` (the same, with a command pattern for the command).
    pub match_kind: String,
    pub input: String,
    pub created_at: i64,
    pub created_by: String,
    /// The one session a session-scoped rule applies to; `None`: all of the
    /// owner's sessions.
    pub session_id: Option<String>,
    /// That session's title, for the settings page.
    pub session_title: Option<String>,
}

impl ApprovalRule {
    /// What the settings page shows: an exact rule's fields; a pattern
    /// rule's pattern and, as JSON, the other fields it holds to.
    pub fn shown(&self) -> (String, Option<String>) {
        if self.match_kind != "pattern" {
            return (self.input.clone(), None);
        }
        let mut rule = stored_pattern_rule(&self.input, "command");
        let key = ["command", "cmd"]
            .into_iter()
            .find(|k| rule.get(*k).is_some_and(Value::is_string))
            .unwrap_or("command");
        let pattern = rule.remove(key);
        let pattern = pattern.as_ref().and_then(Value::as_str).unwrap_or_default();
        let rest = (!rule.is_empty()).then(|| Value::Object(rule).to_string());
        (pattern.to_owned(), rest)
    }
}

/// A live rule that covers a request.
pub struct MatchedRule {
    pub id: String,
    /// Set when it covers the request by command pattern.
    pub pattern: Option<String>,
}

impl MatchedRule {
    /// The result of a request this rule approved at once.
    pub fn result(&self) -> Value {
        let mut result = json!({ "decision": "always", "rule_id": self.id, "automatic": true });
        if let Some(pattern) = &self.pattern {
            result["pattern"] = json!(pattern);
        }
        result
    }
}

/// The live rule matching this request, if any: one for its exact
/// identifying fields, else a command pattern that covers its (plain)
/// command with every other identifying field equal.
pub async fn matching_rule(
    conn: &mut AnyConnection,
    owner: &UserId,
    session: &SessionId,
    params: &ApprovalParams,
) -> sqlx::Result<Option<MatchedRule>> {
    let exact = sqlx::query_scalar(
        "SELECT id FROM approval_rules WHERE owner_id = $1 AND tool = $2 AND match_kind = 'exact' \
         AND input = $3 AND revoked_at IS NULL AND (session_id IS NULL OR session_id = $4) \
         ORDER BY created_at LIMIT 1",
    )
    .bind(owner)
    .bind(&params.tool)
    .bind(params.canonical_input())
    .bind(session)
    .fetch_optional(&mut *conn)
    .await?;
    if let Some(id) = exact {
        return Ok(Some(MatchedRule { id, pattern: None }));
    }
    if params.command().is_none() {
        return Ok(None);
    }
    let patterns: Vec<(String, String)> = sqlx::query_as(
        "SELECT id, input FROM approval_rules WHERE owner_id = $1 AND tool = $2 \
         AND match_kind = 'pattern' AND revoked_at IS NULL \
         AND (session_id IS NULL OR session_id = $3) ORDER BY created_at",
    )
    .bind(owner)
    .bind(&params.tool)
    .bind(session)
    .fetch_all(conn)
    .await?;
    Ok(patterns.into_iter().find_map(|(id, stored)| {
        params.covered_by(&stored).map(|pattern| MatchedRule {
            id,
            pattern: Some(pattern),
        })
    }))
}

/// Where a new rule is kept: its owner, who gave it, and the one session
/// it is for (`None`: all of the owner's sessions).
pub struct RuleOwner<'a> {
    pub owner: &'a UserId,
    pub by: &'a UserId,
    pub session: Option<&'a SessionId>,
}

/// Records an "Always" answer for these identifying fields, or for every
/// command matching `pattern` with the other identifying fields as they
/// are; returns the rule id (an existing live one of the same scope if any).
pub async fn keep_rule(
    conn: &mut AnyConnection,
    rule: RuleOwner<'_>,
    params: &ApprovalParams,
    pattern: Option<&str>,
) -> sqlx::Result<String> {
    let RuleOwner { owner, by, session } = rule;
    let (kind, input) = match pattern {
        Some(pattern) => ("pattern", params.pattern_rule(pattern)),
        None => ("exact", params.canonical_input()),
    };
    let scope = session.map(SessionId::as_str).unwrap_or_default();
    let existing = sqlx::query_scalar(
        "SELECT id FROM approval_rules WHERE owner_id = $1 AND tool = $2 AND match_kind = $3 \
         AND input = $4 AND revoked_at IS NULL AND COALESCE(session_id, '') = $5",
    )
    .bind(owner)
    .bind(&params.tool)
    .bind(kind)
    .bind(&input)
    .bind(scope)
    .fetch_optional(&mut *conn)
    .await?;
    if let Some(id) = existing {
        return Ok(id);
    }
    let id = uuid::Uuid::new_v4().to_string();
    sqlx::query(
        "INSERT INTO approval_rules (id, owner_id, tool, match_kind, input, created_at, created_by, session_id) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&id)
    .bind(owner)
    .bind(&params.tool)
    .bind(kind)
    .bind(&input)
    .bind(clock::now_ms())
    .bind(by)
    .bind(session)
    .execute(conn)
    .await?;
    Ok(id)
}

/// The owner's live rules, newest first.
pub async fn list_rules(conn: &mut AnyConnection, owner: &UserId) -> Result<Vec<ApprovalRule>> {
    Ok(sqlx::query_as(
        "SELECT r.id, r.tool, r.match_kind, r.input, r.created_at, u.name AS created_by, \
         r.session_id, s.title AS session_title FROM approval_rules r \
         JOIN users u ON u.id = r.created_by LEFT JOIN sessions s ON s.id = r.session_id \
         WHERE r.owner_id = $1 AND r.revoked_at IS NULL ORDER BY r.created_at DESC",
    )
    .bind(owner)
    .fetch_all(conn)
    .await?)
}

/// Revokes one of the owner's live rules; 404 otherwise. Returns its tool.
pub async fn revoke_rule(conn: &mut AnyConnection, owner: &UserId, id: &str) -> Result<String> {
    let tool: Option<String> = sqlx::query_scalar(
        "UPDATE approval_rules SET revoked_at = $1 WHERE id = $2 AND owner_id = $3 AND revoked_at IS NULL RETURNING tool",
    )
    .bind(clock::now_ms())
    .bind(id)
    .bind(owner)
    .fetch_optional(conn)
    .await?;
    tool.ok_or(Error::NotFound("approval rule"))
}
