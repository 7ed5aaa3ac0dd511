//! Several approvers: an approval may need `approvers` distinct people
//! (with `prompt` access, or the creator) to allow it. Each allow before
//! the last is a vote: the widget stays pending, the vote is kept in its
//! pending `result` (`{"approvals": [{"by", "user_id", "at"}]}`, shown on
//! the card as "1 of 2 approved") and audited; the last one completes it.
//! The first denial ends it at once. "Always" needs a single approver.

use serde_json::{Value, json};
use sqlx::AnyConnection;

use crate::access::{self, Access};
use crate::clock;
use crate::error::{Error, Result};
use crate::ids::UserId;
use crate::sessions::{Session, Sharing};

/// Most approvers one request may need.
pub const MAX_APPROVERS: u32 = 5;

/// Checks the agent's `approvers`: 1 to [`MAX_APPROVERS`]; `None` for one.
pub fn check_count(approvers: Option<u32>) -> Result<Option<u32>> {
    match approvers {
        None | Some(1) => Ok(None),
        Some(n) if (2..=MAX_APPROVERS).contains(&n) => Ok(Some(n)),
        Some(_) => Err(Error::invalid(
            "invalid_approvers",
            format!("`approvers` is 1 to {MAX_APPROVERS}"),
        )),
    }
}

/// How many people may answer `session`: its creator, and every enabled
/// user with `prompt` access (everyone, when others may prompt).
pub async fn answerers(conn: &mut AnyConnection, session: &Session) -> sqlx::Result<i64> {
    if session.others_can == Sharing::Prompt {
        return sqlx::query_scalar("SELECT COUNT(*) FROM users WHERE disabled = 0")
            .fetch_one(conn)
            .await;
    }
    let shared: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM session_grants g JOIN users u ON u.id = g.user_id \
         WHERE g.session_id = $1 AND g.access = 'prompt' AND u.disabled = 0 AND g.user_id <> $2",
    )
    .bind(&session.id)
    .bind(&session.creator_id)
    .fetch_one(conn)
    .await?;
    Ok(shared + 1)
}

/// `422 too_many_approvers` when fewer people may answer the session than
/// the request needs: it could never be approved.
pub async fn check_possible(
    conn: &mut AnyConnection,
    session: &Session,
    needed: u32,
) -> Result<()> {
    if needed <= 1 {
        return Ok(());
    }
    let can = answerers(conn, session).await?;
    if can < i64::from(needed) {
        return Err(Error::invalid(
            "too_many_approvers",
            format!(
                "`approvers` is {needed}, but only {can} {} may answer this session; share it \
                 with `prompt` access first, or ask for fewer",
                if can == 1 { "person" } else { "people" }
            ),
        ));
    }
    Ok(())
}

/// The approvals given so far, from a pending widget's `result`.
pub fn approvals(pending: Option<&str>) -> Vec<Value> {
    pending
        .and_then(|r| serde_json::from_str::<Value>(r).ok())
        .and_then(|r| r["approvals"].as_array().cloned())
        .unwrap_or_default()
}

/// The approvals with `user`'s added, with their comment if they wrote
/// one; `422 already_approved` if they approved already (the approvers
/// must be distinct).
pub fn add(
    mut approvals: Vec<Value>,
    user: &UserId,
    by: &str,
    comment: Option<&str>,
) -> Result<Vec<Value>> {
    if approvals.iter().any(|a| a["user_id"] == user.as_str()) {
        return Err(Error::invalid(
            "already_approved",
            "you have already approved this request; it needs another person's approval",
        ));
    }
    let mut vote = json!({ "by": by, "user_id": user.as_str(), "at": clock::now_ms() });
    if let Some(comment) = comment {
        vote["comment"] = json!(comment);
    }
    approvals.push(vote);
    Ok(approvals)
}

/// The earlier votes that still count: those of people who may still
/// answer `session` (not disabled, with `prompt` access or its creator).
/// A vote of someone whose access was revoked, or who was disabled, since
/// is dropped, so the request cannot complete on it.
pub async fn still_allowed(
    conn: &mut AnyConnection,
    session: &Session,
    approvals: Vec<Value>,
) -> Result<Vec<Value>> {
    let mut kept = Vec::with_capacity(approvals.len());
    for vote in approvals {
        let Some(user) = vote["user_id"].as_str().and_then(UserId::parse) else {
            continue;
        };
        let disabled: Option<i64> = sqlx::query_scalar("SELECT disabled FROM users WHERE id = $1")
            .bind(&user)
            .fetch_optional(&mut *conn)
            .await?;
        if disabled != Some(0) {
            continue;
        }
        if access::person_access(conn, session, &user).await? >= Access::Prompt {
            kept.push(vote);
        }
    }
    Ok(kept)
}

/// Keeps every approver's comment in a decided request's `result`:
/// `comments`, `[{"by", "comment"}]` in the order given, and `comment`,
/// the same as one line (`bob: …; alice: …`), which the agent and its
/// hooks read. Nothing changes when no approver wrote one.
pub fn keep_comments(result: &mut Value, approvals: &[Value]) {
    let comments: Vec<Value> = approvals
        .iter()
        .filter_map(|a| {
            let comment = a["comment"].as_str()?;
            Some(json!({ "by": a["by"], "comment": comment }))
        })
        .collect();
    if comments.is_empty() {
        return;
    }
    if result["decision"] != "deny" {
        let line: Vec<String> = comments
            .iter()
            .map(|c| {
                format!(
                    "{}: {}",
                    c["by"].as_str().unwrap_or_default(),
                    c["comment"].as_str().unwrap_or_default()
                )
            })
            .collect();
        result["comment"] = json!(line.join("; "));
    }
    result["comments"] = Value::Array(comments);
}

/// The names of who approved, in order.
pub fn names(approvals: &[Value]) -> Vec<String> {
    approvals
        .iter()
        .filter_map(|a| a["by"].as_str().map(str::to_owned))
        .collect()
}
