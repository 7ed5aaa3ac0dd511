//! The approval kind: an "Always" rule may answer the request at once; a
//! person decides Deny (with a reason), Once, Always or Always for commands
//! like this one; the resume prompt tells the agent whether to run it.

use serde_json::Value;
use sqlx::AnyConnection;

use super::{
    ApprovalParams, Decision, MatchedRule, RequestApprovalInput, keep_rule, matching_rule,
    parse_decision, result,
};
use crate::error::AppResult;
use crate::sessions::Session;
use crate::widgets::WidgetStatus;
use crate::widgets::card::{Badge, Card, who};
use crate::widgets::kind::{AnswerBody, Answering, Kind, Request};

/// The approval kind and its request, `request_approval`.
pub struct Approval;

impl Request for Approval {
    type Kind = Self;
    const NAME: &'static str = "approval";
    type Input = RequestApprovalInput;

    fn parse(input: RequestApprovalInput) -> AppResult<ApprovalParams> {
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

    /// An identical request the creator approved "always" is born approved.
    async fn born(
        tx: &mut AnyConnection,
        session: &Session,
        params: &ApprovalParams,
    ) -> AppResult<Option<Value>> {
        let rule = matching_rule(tx, &session.creator_id, params).await?;
        Ok(rule.as_ref().map(MatchedRule::result))
    }

    fn read(body: AnswerBody) -> AppResult<Self::Answer> {
        body.plain_fields()
    }

    /// Deny (with an optional reason), once, or always (which keeps a rule
    /// for identical requests, or for commands matching a pattern).
    async fn apply(
        cx: &mut Answering<'_>,
        params: &ApprovalParams,
        fields: Self::Answer,
    ) -> AppResult<Value> {
        let form = parse_decision(&fields)?;
        if let Some(pattern) = &form.pattern {
            params.check_pattern(pattern)?;
        }
        if let Some(reason) = &form.reason {
            cx.refuse_secrets(&[reason]).await?;
        }
        let rule = match form.decision {
            Decision::Always => {
                let pattern = form.pattern.as_deref();
                let owner = &cx.session.creator_id;
                Some(keep_rule(cx.conn, owner, cx.user, params, pattern).await?)
            }
            _ => None,
        };
        Ok(result(&form, cx.by, rule.as_deref()))
    }

    fn prompt(tag: &str, params: &ApprovalParams, to: WidgetStatus, result: &Value) -> String {
        prompt(tag, to, &params.tool, result)
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
        Badge { class, icon, text }
    }

    fn render(params: &ApprovalParams, card: &Card<'_>) -> AppResult<String> {
        super::card::render(params, card)
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
            "{tag} User approved {tool} for commands like `{}`, now and in future requests. You can run it now.",
            pattern.unwrap_or_default()
        ),
        (WidgetStatus::Submitted, Some("once")) => {
            format!("{tag} User approved {tool} once. You can run it now.")
        }
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
