//! A widget leaving `pending`, whatever the cause (an answer, a dismissal,
//! expiry, cancellation, the agent's withdrawal): the guarded update, then
//! its resume prompt, event and audit row in one statement (`db::Script`),
//! then its webhook notices and Slack messages.

use serde_json::{Value, json};

use super::kind::Loaded;
use super::notices::{self, notify};
use super::{store, text};
use crate::audit::{self, Entry};
use crate::db::{Dialect, Script, WriteTx};
use crate::error::{Error, Result};
use crate::ids::UserId;
use crate::widgets::engine::row::{Cause, WidgetRow, WidgetStatus};
use crate::{Core, clock, events, prompts};

/// Where a widget goes, with what result, and who took it there.
pub(super) struct Change<'a> {
    pub(super) to: WidgetStatus,
    pub(super) result: &'a Value,
    pub(super) by: Option<&'a UserId>,
}

/// Takes `widget` out of `pending` (the guarded update), then writes the
/// prompt, event and audit row; the row as the update left it. 409 with
/// the current status if it was not pending any more.
pub(super) async fn transition(
    tx: &mut WriteTx,
    state: &Core,
    widget: &WidgetRow,
    loaded: &dyn Loaded,
    change: Change<'_>,
    cause: &Cause<'_>,
) -> Result<WidgetRow> {
    let resolved = resolve(tx, widget, &change).await?;
    after_resolution(tx, state, widget, loaded, change.to, change.result, cause).await?;
    Ok(resolved)
}

/// [`transition`] as the transaction's last work, then its commit, which
/// the prompt, event and audit row carry where no notice follows them
/// (`notices::commit_with`). A widget no longer pending is refused once
/// the batch settled ([`refused_once_settled`]).
pub(super) async fn settle(
    mut tx: WriteTx,
    state: &Core,
    widget: &WidgetRow,
    loaded: &dyn Loaded,
    change: Change<'_>,
    cause: &Cause<'_>,
) -> Result<WidgetRow> {
    let resolved = match resolve(&mut tx, widget, &change).await {
        Ok(resolved) => resolved,
        Err(err) => return Err(refused_once_settled(tx, err).await),
    };
    let script = script(
        &mut tx,
        state,
        widget,
        loaded,
        change.to,
        change.result,
        cause,
    )
    .await?;
    let event = ("widget.resolved", change.to);
    notices::commit_with(tx, script, state, widget, loaded, event).await?;
    Ok(resolved)
}

/// An answer refused because the widget is no longer pending. On SQLite
/// the answer that ended it may sit uncommitted in the same write batch:
/// the refusal waits for that batch's commit (its own savepoint changed
/// nothing), so that what it says, and what a page shows next, is on disk.
/// A batch that failed is reported as that failure instead.
pub(super) async fn refused_once_settled(tx: WriteTx, err: Error) -> Error {
    if !matches!(err, Error::WidgetNotPending(_)) {
        return err;
    }
    match tx.commit().await {
        Ok(()) => err,
        Err(failed) => failed.into(),
    }
}

/// The guarded update: the row as it left it, or 409 with the status it has
/// if it was not pending any more.
async fn resolve(tx: &mut WriteTx, widget: &WidgetRow, change: &Change<'_>) -> Result<WidgetRow> {
    let now = clock::now_ms();
    let resolved = store::resolve(tx, &widget.id, change.to, change.result, change.by, now).await?;
    match resolved {
        Some(resolved) => Ok(resolved),
        None => {
            let current = crate::widgets::engine::read::get_widget(tx, &widget.id)
                .await?
                .status;
            Err(Error::WidgetNotPending(current.as_str()))
        }
    }
}

/// What follows the guarded update of `widget` to `to`: its prompt, event
/// and audit row, then its webhook notices and Slack messages.
pub(super) async fn after_resolution(
    tx: &mut WriteTx,
    state: &Core,
    widget: &WidgetRow,
    loaded: &dyn Loaded,
    to: WidgetStatus,
    result: &Value,
    cause: &Cause<'_>,
) -> Result<()> {
    script(tx, state, widget, loaded, to, result, cause)
        .await?
        .run(tx)
        .await?;
    notify(tx, state, widget, loaded, "widget.resolved", to).await?;
    Ok(())
}

/// The prompt, event and audit row of a resolution: one statement.
async fn script(
    tx: &mut WriteTx,
    state: &Core,
    widget: &WidgetRow,
    loaded: &dyn Loaded,
    to: WidgetStatus,
    result: &Value,
    cause: &Cause<'_>,
) -> Result<Script> {
    let tag = &state.settings.prompt_tag;
    let text = withdrawal_prompt(tag, to, result).unwrap_or_else(|| loaded.prompt(tag, to, result));
    let note = result["note"]
        .as_str()
        .filter(|_| to == WidgetStatus::Dismissed);
    let text = text::with_note(text, note);
    let mut script = Script::new(Dialect::of(tx));
    prompts::queue_into(&mut script, &widget.session_id, &widget.id, text);
    let resolved = json!({ "widget_id": widget.id, "status": to, "result": result });
    events::record_into(
        tx,
        &mut script,
        &widget.session_id,
        "widget:resolved",
        &resolved,
    )
    .await?;
    let action = match to {
        WidgetStatus::Submitted => "widget.submit",
        WidgetStatus::Dismissed => "widget.dismiss",
        WidgetStatus::Expired => "widget.expire",
        WidgetStatus::Cancelled => "widget.cancel",
        WidgetStatus::AlreadyPresent => "widget.already_present",
        WidgetStatus::Pending => unreachable!("a resolution leaves pending"),
    };
    let entry = Entry {
        action,
        session: Some(&widget.session_id),
        widget: Some(widget.id.as_str()),
        names: loaded.env_names().map(|n| n.join(",")),
        scope: result["scope"].as_str(),
        detail: match (result["decision"].as_str(), result["withdrawn_by"].as_str()) {
            (Some(d), _) => Some(crate::widgets::kinds::approval::audit_detail(d, result)),
            (None, Some(_)) => Some(match result["replaced_by"].as_str() {
                Some(new) => format!("withdrawn by the agent; replaced_by={new}"),
                None => "withdrawn by the agent".to_owned(),
            }),
            (None, None) => None,
        },
    };
    audit::append_into(tx, &mut script, cause.actor, cause.client, entry).await?;
    Ok(script)
}

/// The resume prompt of a widget its agent withdrew (written already
/// delivered), instead of the kind's "the session was archived".
pub fn withdrawal_prompt(tag: &str, to: WidgetStatus, result: &Value) -> Option<String> {
    if to != WidgetStatus::Cancelled || result["withdrawn_by"].is_null() {
        return None;
    }
    Some(match result["replaced_by"].as_str() {
        Some(new) => format!("{tag} You replaced this request with {new}; nothing was given."),
        None => format!("{tag} You withdrew this request; nothing was given."),
    })
}
