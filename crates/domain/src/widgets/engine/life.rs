//! A widget's life after it is asked, the same for every kind: how long it
//! waits for a person (`expires_in_seconds`), the agent withdrawing it
//! (`cancel_widget`) or replacing it with an amended one (`replaces`), and
//! the agent listing what still waits (`list_pending_widgets`).
//!
//! `expires_in_seconds` and `replaces` are fields of every creating call.
//! They are taken out of the agent's arguments here, before the rest is
//! read as the kind's own input, so no kind declares them.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use sqlx::AnyConnection;

use super::resolution::{self, Change};
use super::{store, text};
use crate::Core;
use crate::audit::Actor;
use crate::db::WriteTx;
use crate::error::{Error, Result};
use crate::ids::SessionId;
use crate::ids::WidgetId;
use crate::input::parse_value;
use crate::prompts;
use crate::widgets::engine::read::get_widget;
use crate::widgets::engine::row::{Cause, WidgetRow, WidgetStatus, WidgetView};

/// Most widgets one listing returns (a session has at most 50 pending).
pub const MAX_LISTED: i64 = 100;

/// The rules of the reason an agent gives for withdrawing a widget.
pub const REASON: text::TextRules = text::TextRules {
    what: "the reason",
    max_chars: text::MAX_NOTE_CHARS,
    too_long: "reason_too_long",
    invalid: "invalid_reason",
};

/// The fields every creating call takes besides its kind's own.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LifeInput {
    /// Let the request wait at most this many seconds for the person (at
    /// least 1, at most the server's maximum, by default 7 days); then it
    /// expires and you are told so. Default: the server's maximum.
    #[serde(default)]
    pub expires_in_seconds: Option<u64>,
    /// Withdraw a pending request of this session and ask this one
    /// instead: the old card says it was replaced, with your reason, and
    /// links to this one. Refused (and nothing created) when the old one
    /// was already answered.
    #[serde(default)]
    pub replaces: Option<Replaces>,
}

/// The request a new one replaces.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Replaces {
    /// The `widget_id` of the pending request to withdraw.
    pub widget_id: String,
    /// Why, shown to the person on the old card (at most 500 characters).
    #[serde(default)]
    pub reason: Option<String>,
}

/// What the common fields ask, validated.
#[derive(Debug, Default)]
pub struct Life {
    /// Milliseconds the widget waits, when the agent chose.
    pub expires_in_ms: Option<i64>,
    /// The widget to withdraw, and why.
    pub replaces: Option<(WidgetId, Option<String>)>,
}

/// The names of the common fields, as they stand in a creating call.
const FIELDS: [&str; 2] = ["expires_in_seconds", "replaces"];

/// Takes the common fields out of a creating call's arguments and checks
/// them against the server's longest wait `ttl_ms`; the rest is the kind's
/// input. `422 expiry_too_long` above it, `422 invalid_expiry` for 0; a
/// `replaces.widget_id` that is no widget id is `404 not_found`.
pub fn split(args: &mut Map<String, Value>, ttl_ms: i64) -> Result<Life> {
    let mut own = Map::new();
    for key in FIELDS {
        if let Some(value) = args.remove(key) {
            own.insert(key.to_owned(), value);
        }
    }
    let input: LifeInput = parse_value(Value::Object(own))?;
    let max_secs = ttl_ms / 1000;
    let expires_in_ms = match input.expires_in_seconds {
        None => None,
        Some(0) => {
            return Err(Error::invalid(
                "invalid_expiry",
                "`expires_in_seconds` is at least 1",
            ));
        }
        Some(s) if i64::try_from(s).map_or(true, |s| s > max_secs) => {
            return Err(Error::invalid(
                "expiry_too_long",
                format!("`expires_in_seconds` is at most {max_secs} on this server"),
            ));
        }
        Some(s) => Some(i64::try_from(s).unwrap_or(i64::MAX) * 1000),
    };
    let replaces = match input.replaces {
        None => None,
        Some(r) => {
            let id = WidgetId::parse(&r.widget_id).ok_or(Error::NotFound("widget"))?;
            let reason = match r.reason {
                Some(raw) => text::plain_text(&raw, &REASON)?,
                None => None,
            };
            Some((id, reason))
        }
    };
    Ok(Life {
        expires_in_ms,
        replaces,
    })
}

/// Withdraws `widget` inside the caller's transaction: `cancelled`, with
/// `withdrawn_by: "agent"`, the reason and the widget replacing it in its
/// result, its prompt written and marked delivered at once (the agent
/// withdrew it itself; no later turn starts from it). `409
/// widget_not_pending` when a person answered first: the engine's guarded
/// transition lets one of them win. The agent withdraws only what it asked
/// itself: a widget the host asked is `422 not_asked_by_agent`. The row as
/// the withdrawal left it.
pub(super) async fn withdraw(
    tx: &mut WriteTx,
    state: &Core,
    widget: &WidgetRow,
    reason: Option<&str>,
    replaced_by: Option<&WidgetId>,
    cause: &Cause<'_>,
) -> Result<WidgetRow> {
    if widget.status != WidgetStatus::Pending {
        return Err(Error::WidgetNotPending(widget.status.as_str()));
    }
    if matches!(cause.actor, Actor::Agent(_)) && store::asked_by_host(tx, &widget.id).await? {
        return Err(Error::invalid(
            "not_asked_by_agent",
            "the session's host asked this request, not you: only the host or the person can \
             withdraw or replace it",
        ));
    }
    let loaded = crate::widgets::kinds::load_or_lapsed(&widget.kind, &widget.params);
    let mut result = loaded.unanswered();
    result["withdrawn_by"] = json!("agent");
    if let Some(reason) = reason {
        result["reason"] = json!(reason);
    }
    if let Some(new) = replaced_by {
        result["replaced_by"] = json!(new);
    }
    let change = Change {
        to: WidgetStatus::Cancelled,
        result: &result,
        by: None,
    };
    let withdrawn = resolution::transition(tx, state, widget, &*loaded, change, cause).await?;
    prompts::ack_widget(tx, &widget.session_id, &widget.id).await?;
    Ok(withdrawn)
}

/// The widget a new one replaces, withdrawn in the new one's transaction:
/// it must be a widget of the same session (another session's is not
/// found) and still pending.
pub(super) async fn replace(
    tx: &mut WriteTx,
    state: &Core,
    session: &SessionId,
    (old, reason): &(WidgetId, Option<String>),
    new: &WidgetId,
    cause: &Cause<'_>,
) -> Result<()> {
    let widget = get_widget(tx, old).await?;
    if &widget.session_id != session {
        return Err(Error::NotFound("widget"));
    }
    withdraw(tx, state, &widget, reason.as_deref(), Some(new), cause).await?;
    Ok(())
}

/// The agent of `agent`'s session withdraws its widget `id`, with an
/// optional reason shown to the person. Another session's widget is not
/// found; one that is no longer pending is `409 widget_not_pending`.
pub async fn cancel_by_agent(
    state: &Core,
    id: &WidgetId,
    agent: &SessionId,
    reason: Option<String>,
    cause: Cause<'_>,
) -> Result<WidgetView> {
    let mut tx = state.db.begin_write().await?;
    let widget = crate::widgets::engine::read::get_widget_locked(&mut tx, id).await?;
    if &widget.session_id != agent {
        return Err(Error::NotFound("widget"));
    }
    let view = match withdraw(&mut tx, state, &widget, reason.as_deref(), None, &cause).await {
        Ok(row) => row.into(),
        Err(err) => return Err(resolution::refused_once_settled(tx, err).await),
    };
    tx.commit().await?;
    state.hub.publish(&widget.session_id);
    Ok(view)
}

/// The widgets of `session` in `status`, newest first, at most
/// [`MAX_LISTED`], as their agent sees them (never a value).
pub async fn list(
    conn: &mut AnyConnection,
    session: &SessionId,
    status: WidgetStatus,
) -> Result<Vec<WidgetView>> {
    let rows = store::with_status(conn, session, status, MAX_LISTED).await?;
    Ok(rows.into_iter().map(WidgetView::from).collect())
}

/// The body of a listing.
pub fn listing(session: &SessionId, status: WidgetStatus, widgets: Vec<WidgetView>) -> Value {
    json!({ "session_id": session, "status": status, "widgets": widgets })
}

/// What the card of a withdrawn widget says beside its badge: the reason
/// and the request that replaced it.
pub struct Withdrawn {
    pub reason: Option<String>,
    pub replaced_by: Option<String>,
}

/// [`Withdrawn`] of a widget its agent withdrew.
pub fn withdrawn(widget: &WidgetRow) -> Option<Withdrawn> {
    if widget.status != WidgetStatus::Cancelled {
        return None;
    }
    let result: Value = serde_json::from_str(widget.result.as_deref()?).ok()?;
    result["withdrawn_by"].as_str()?;
    Some(Withdrawn {
        reason: result["reason"].as_str().map(str::to_owned),
        replaced_by: result["replaced_by"].as_str().map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_of(args: Value, ttl_ms: i64) -> (Result<Life>, Map<String, Value>) {
        let Value::Object(mut args) = args else {
            panic!("an object")
        };
        let life = split(&mut args, ttl_ms);
        (life, args)
    }

    fn code(result: Result<Life>) -> &'static str {
        match result {
            Err(Error::Invalid { code, .. } | Error::BadRequest { code, .. }) => code,
            Err(Error::NotFound(_)) => "not_found",
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_life_fields_are_taken_out_and_bounded_by_the_ttl() {
        let (life, rest) = split_of(
            json!({ "question": "Q?", "expires_in_seconds": 60, "wait_seconds": 5 }),
            3_600_000,
        );
        assert_eq!(life.unwrap().expires_in_ms, Some(60_000));
        assert_eq!(
            Value::Object(rest),
            json!({ "question": "Q?", "wait_seconds": 5 })
        );
        let (life, _) = split_of(json!({ "expires_in_seconds": 3600 }), 3_600_000);
        assert_eq!(life.unwrap().expires_in_ms, Some(3_600_000));
        for (args, expected) in [
            (json!({ "expires_in_seconds": 3601 }), "expiry_too_long"),
            (json!({ "expires_in_seconds": u64::MAX }), "expiry_too_long"),
            (json!({ "expires_in_seconds": 0 }), "invalid_expiry"),
            (json!({ "expires_in_seconds": -1 }), "invalid_body"),
            (json!({ "replaces": "w_x" }), "invalid_body"),
            (json!({ "replaces": { "widget_id": "nope" } }), "not_found"),
            (
                json!({ "replaces": { "widget_id": "x", "why": 1 } }),
                "invalid_body",
            ),
        ] {
            assert_eq!(
                code(split_of(args.clone(), 3_600_000).0),
                expected,
                "{args}"
            );
        }
        let (life, rest) = split_of(json!({ "question": "Q?" }), 1000);
        let life = life.unwrap();
        assert!(life.expires_in_ms.is_none() && life.replaces.is_none());
        assert_eq!(rest.len(), 1);
    }

    #[test]
    fn a_withdrawal_has_its_own_prompt_and_card_line() {
        let withdrawn = json!({ "withdrawn_by": "agent", "replaced_by": "w_new" });
        let prompt = super::super::resolution::withdrawal_prompt(
            "[Agor]",
            WidgetStatus::Cancelled,
            &withdrawn,
        );
        assert_eq!(
            prompt.as_deref(),
            Some("[Agor] You replaced this request with w_new; nothing was given.")
        );
        let archived = json!({});
        assert!(
            super::super::resolution::withdrawal_prompt(
                "[Agor]",
                WidgetStatus::Cancelled,
                &archived
            )
            .is_none()
        );
        assert!(
            super::super::resolution::withdrawal_prompt(
                "[Agor]",
                WidgetStatus::Expired,
                &withdrawn
            )
            .is_none()
        );
    }
}
