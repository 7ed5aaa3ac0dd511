//! The approval kind: an "Always" rule may answer the request at once; a
//! person decides Deny (with a reason), Once, Always or Always for commands
//! like this one; the resume prompt tells the agent whether to run it.

use serde_json::{Value, json};
use sqlx::AnyConnection;

use super::{
    ApprovalParams, Decision, DecisionForm, MatchedRule, RequestApprovalInput, RuleOwner,
    RuleScope, edit, keep_rule, matching_rule, parse_decision, quorum, result,
};
use crate::error::Result;
use crate::sessions::Session;
use crate::widgets::engine::badge::{Badge, who};
use crate::widgets::engine::kind::{AnswerBody, Answering, Kind, Request};
use crate::widgets::engine::row::WidgetStatus;

/// The approval kind and its request, `request_approval`.
pub struct Approval;

impl Request for Approval {
    type Kind = Self;
    const NAME: &'static str = "approval";
    type Input = RequestApprovalInput;

    fn parse(input: RequestApprovalInput) -> Result<ApprovalParams> {
        ApprovalParams::parse(&input)
    }

    fn wait_seconds(input: &RequestApprovalInput) -> Option<u64> {
        input.wait_seconds
    }
}

impl Kind for Approval {
    const NAMES: &'static [&'static str] = &[Self::NAME];
    type Params = ApprovalParams;
    type Answer = Vec<(String, String)>;
    const BORN_READS: bool = true;

    /// An identical request the creator approved "always" (for all their
    /// sessions, or for this one) is born approved. One that needs more
    /// approvers than may answer the session is refused.
    async fn born(
        tx: &mut AnyConnection,
        session: &Session,
        params: &ApprovalParams,
        _ahead: Option<&str>,
    ) -> Result<Option<Value>> {
        quorum::check_possible(tx, session, params.quorum()).await?;
        let rule = matching_rule(tx, &session.creator_id, &session.id, params).await?;
        Ok(rule.as_ref().map(MatchedRule::result))
    }

    fn read(body: AnswerBody) -> Result<Self::Answer> {
        body.plain_fields()
    }

    /// Deny (with an optional comment), once, or always (which keeps a
    /// rule for identical requests, or for commands matching a pattern, in
    /// this session or all of the creator's), each with an optional
    /// comment, and, where the agent allowed it, the input edited. Where
    /// several approvers are needed, an allow before the last is a vote.
    async fn apply(
        cx: &mut Answering<'_>,
        params: &ApprovalParams,
        fields: Self::Answer,
    ) -> Result<Value> {
        let form = parse_decision(&fields)?;
        let edited = match form.decision {
            Decision::Deny => None,
            _ => edit::read(params, form.edited.as_deref())?,
        };
        // What is approved: the input as the person left it.
        let approved = ApprovalParams {
            input: edited.clone().unwrap_or_else(|| params.input.clone()),
            ..params.clone()
        };
        if let Some(pattern) = &form.pattern {
            approved.check_pattern(pattern)?;
        }
        let mut typed: Vec<&str> = form.reason.as_deref().into_iter().collect();
        if let Some(edited) = &edited {
            typed.extend(edit::strings(edited));
        }
        cx.refuse_secrets(&typed).await?;
        if params.quorum() > 1 {
            return voted(cx, &form, params, &approved, edited).await;
        }
        decided(cx, &form, params, &approved, edited).await
    }

    fn prompt(tag: &str, params: &ApprovalParams, to: WidgetStatus, result: &Value) -> String {
        let text = prompt(tag, to, &params.tool, result);
        let decided = to == WidgetStatus::Submitted && result["decision"] != "deny";
        let text = match result.get("edited_input").filter(|_| decided) {
            Some(edited) => format!(
                "{text} The user edited the input before allowing it: run {} with exactly this \
                 input, not the one you asked for: {edited}",
                params.tool
            ),
            None => text,
        };
        let whose = match result.get("comments") {
            Some(_) => "Approvers' comments",
            None => "User's comment",
        };
        match result["comment"].as_str().filter(|_| decided) {
            Some(comment) => format!("{text} {whose}: {}", Value::from(comment)),
            None => text,
        }
    }

    fn subject(_: &ApprovalParams) -> String {
        "Approval request".to_owned()
    }

    fn answered_badge(
        _: &ApprovalParams,
        status: WidgetStatus,
        result: &Value,
        when: &str,
    ) -> Badge {
        let by = who(result, "answered_by");
        let (class, icon, text) = match (status, result["decision"].as_str()) {
            (WidgetStatus::AlreadyPresent, _) => (
                "already-present",
                "check",
                "Approved automatically (always allowed for this input)".to_owned(),
            ),
            (_, Some("once")) => (
                "submitted",
                "check-circle",
                format!("Approved once by {by} at {when}"),
            ),
            (_, Some("always")) if result["scope"] == "session" => (
                "submitted",
                "check-circle",
                format!("Always approved (this session only) by {by} at {when}"),
            ),
            (_, Some("always")) => (
                "submitted",
                "check-circle",
                format!("Always approved by {by} at {when}"),
            ),
            _ => {
                let why = result["reason"]
                    .as_str()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default();
                ("denied", "ban", format!("Denied by {by} at {when}{why}"))
            }
        };
        let text = match result["approvers"].as_array() {
            Some(all) if all.len() > 1 && result["decision"] != "deny" => {
                let names: Vec<String> = all
                    .iter()
                    .filter_map(|n| n.as_str())
                    .map(crate::widgets::engine::badge::shown_answerer)
                    .collect();
                format!("{text} (approved by {})", names.join(" and "))
            }
            _ => text,
        };
        let text = match (result.get("edited_input"), result["decision"].as_str()) {
            (Some(_), Some("once" | "always")) => format!("{text}, with the input edited"),
            _ => text,
        };
        let text = match result["comment"].as_str() {
            Some(comment) if result["decision"] != "deny" => format!("{text}: {comment}"),
            _ => text,
        };
        Badge { class, icon, text }
    }
}

/// A decision on a request that needs several approvers. They all approve
/// the same thing, the input as the agent asked it: an edit is refused
/// (`422 edit_needs_one_approver`), so no approver can change what the
/// others approved. Earlier votes of people who may no longer answer the
/// session are dropped first. An allow before the last is a vote (kept
/// with its comment); the last completes it; a denial ends it at once.
/// Every approver's comment reaches the agent.
async fn voted(
    cx: &mut Answering<'_>,
    form: &DecisionForm,
    params: &ApprovalParams,
    approved: &ApprovalParams,
    edited: Option<Value>,
) -> Result<Value> {
    if edited.is_some() {
        return Err(crate::error::Error::invalid(
            "edit_needs_one_approver",
            "this request needs several approvers, who all approve the input as the agent asked \
             it: allow it as it is, or deny it with a comment saying what to change",
        ));
    }
    if form.decision == Decision::Always {
        return Err(crate::error::Error::invalid(
            "always_needs_one_approver",
            "this request needs several approvers: it can be allowed once, not always",
        ));
    }
    let earlier = quorum::approvals(cx.widget.result.as_deref());
    let so_far = quorum::still_allowed(cx.conn, cx.session, earlier).await?;
    if form.decision == Decision::Deny {
        let mut done = decided(cx, form, params, approved, None).await?;
        if !so_far.is_empty() {
            done["approvers"] = json!(quorum::names(&so_far));
        }
        quorum::keep_comments(&mut done, &so_far);
        return Ok(done);
    }
    let approvals = quorum::add(so_far, cx.user, cx.by, form.reason.as_deref())?;
    if approvals.len() < params.quorum() as usize {
        cx.stay_pending = true;
        return Ok(json!({
            "approvals": approvals,
            "needed": params.quorum(),
            "decision": form.decision.as_str(),
        }));
    }
    let mut done = decided(cx, form, params, approved, None).await?;
    done["approvers"] = json!(quorum::names(&approvals));
    quorum::keep_comments(&mut done, &approvals);
    Ok(done)
}

/// A decision that ends the request: keeps the rule of an "Always", and
/// returns the result (with the edited input and the original beside it).
async fn decided(
    cx: &mut Answering<'_>,
    form: &DecisionForm,
    params: &ApprovalParams,
    approved: &ApprovalParams,
    edited: Option<Value>,
) -> Result<Value> {
    let rule = match form.decision {
        Decision::Always => {
            let owner = RuleOwner {
                owner: &cx.session.creator_id,
                by: cx.user,
                session: (form.scope == RuleScope::Session).then_some(&cx.session.id),
            };
            let pattern = form.pattern.as_deref();
            Some(keep_rule(cx.conn, owner, approved, pattern).await?)
        }
        _ => None,
    };
    let mut result = result(form, cx.by, rule.as_deref());
    if let Some(edited) = edited {
        result["edited_input"] = edited;
        result["original_input"] = params.input.clone();
    }
    Ok(result)
}

/// The audit row's `detail` of a decision: the decision, and for an edited
/// input both versions (compact JSON).
pub fn audit_detail(decision: &str, result: &Value) -> String {
    match (result.get("original_input"), result.get("edited_input")) {
        (Some(original), Some(edited)) => {
            format!("decision={decision}; original_input={original}; edited_input={edited}")
        }
        _ => format!("decision={decision}"),
    }
}

/// The resume prompt of an approval request for `tool`.
pub fn prompt(tag: &str, status: WidgetStatus, tool: &str, result: &Value) -> String {
    let not_approved = "it was not approved. Do not run it; ask the user how to proceed.";
    let pattern = result["pattern"].as_str();
    match (status, result["decision"].as_str()) {
        (WidgetStatus::AlreadyPresent, _) => match pattern {
            Some(p) => format!(
                "{tag} {tool} is pre-approved for commands like `{p}` (always allowed). You can run it now."
            ),
            None => format!(
                "{tag} {tool} is pre-approved for this exact input (always allowed). You can run it now."
            ),
        },
        (WidgetStatus::Submitted, Some("always")) if pattern.is_some() => format!(
            "{tag} User approved {tool} for commands like `{}`, now and in future requests{}. You can run it now.",
            pattern.unwrap_or_default(),
            if result["scope"] == "session" {
                " of this session"
            } else {
                ""
            }
        ),
        (WidgetStatus::Submitted, Some("once")) => {
            format!("{tag} User approved {tool} once. You can run it now.")
        }
        (WidgetStatus::Submitted, Some("always")) if result["scope"] == "session" => format!(
            "{tag} User approved {tool} for this exact input, now and in future requests of this session. You can run it now."
        ),
        (WidgetStatus::Submitted, Some("always")) => format!(
            "{tag} User approved {tool} for this exact input, now and in future requests. You can run it now."
        ),
        (WidgetStatus::Submitted, _) => match result["reason"].as_str() {
            Some(reason) => format!(
                "{tag} User denied {tool}. Reason: {}. Do not run it; ask the user how to proceed.",
                reason.trim_end_matches('.')
            ),
            None => {
                format!("{tag} User denied {tool}. Do not run it; ask the user how to proceed.")
            }
        },
        (WidgetStatus::Dismissed, _) => {
            format!("{tag} User dismissed the request to run {tool}; {not_approved}")
        }
        (WidgetStatus::Expired, _) => {
            format!("{tag} The request to run {tool} expired unanswered; {not_approved}")
        }
        (WidgetStatus::Cancelled, _) => {
            format!(
                "{tag} The request to run {tool} was cancelled because the session was archived; {not_approved}"
            )
        }
        (WidgetStatus::Pending, _) => unreachable!("pending widgets have no resume prompt"),
    }
}
