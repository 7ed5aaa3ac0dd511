//! An answer that is one of several needed (an approval's quorum): the
//! widget stays pending, its pending `result` records the answers so far,
//! and the vote gets its `widget:updated` event (open pages redraw the
//! card) and its `widget.vote` audit row, in one transaction.

use serde_json::{Value, json};

use super::kind::Answerer;
use crate::Core;
use crate::audit::{self, Actor, ClientAddr, Entry};
use crate::error::{Error, Result};
use crate::events;
use crate::widgets::engine::row::{WidgetRow, WidgetStatus, WidgetView};

/// Records `pending` as `widget`'s result while it stays pending; `409
/// widget_not_pending` if it was answered in between.
pub(super) async fn record(
    mut tx: crate::db::WriteTx,
    state: &Core,
    widget: &WidgetRow,
    pending: &Value,
    by: Answerer<'_>,
    client: &ClientAddr,
) -> Result<WidgetView> {
    let Answerer::Person(user) = by else {
        return Err(Error::invalid(
            "not_answerable_here",
            "this request is answered only by the person, in widgetd's pages",
        ));
    };
    if !super::store::set_pending_result(&mut tx, &widget.id, pending).await? {
        let current = crate::widgets::engine::read::get_widget(&mut tx, &widget.id)
            .await?
            .status;
        tx.commit().await?;
        return Err(Error::WidgetNotPending(current.as_str()));
    }
    let payload =
        json!({ "widget_id": widget.id, "status": WidgetStatus::Pending, "result": pending });
    events::record(&mut tx, &widget.session_id, "widget:updated", &payload).await?;
    let given = pending["approvals"].as_array().map_or(0, Vec::len);
    let entry = Entry {
        action: "widget.vote",
        session: Some(&widget.session_id),
        widget: Some(widget.id.as_str()),
        detail: Some(format!(
            "decision={}; approvals={given}/{}",
            pending["decision"].as_str().unwrap_or("once"),
            pending["needed"]
        )),
        ..Default::default()
    };
    audit::append(&mut tx, &Actor::User(user.clone()), client, entry).await?;
    let view = crate::widgets::engine::read::get_widget(&mut tx, &widget.id)
        .await?
        .into();
    tx.commit().await?;
    state.hub.publish(&widget.session_id);
    Ok(view)
}
