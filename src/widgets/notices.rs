//! Where a widget's change goes besides the transcript: webhook notices
//! and Slack messages, queued in the change's transaction. Whether there
//! is anywhere to go at all is kept in the auth cache under the auth epoch
//! (`auth::Notified`), so a deployment with neither looks for neither.

use sqlx::AnyConnection;

use super::kind::Loaded;
use super::{WidgetRow, WidgetStatus};
use crate::Core;
use crate::auth::Notified;
use crate::db::{Backend, Script, WriteTx};
use crate::error::AppResult;

/// Queues the webhook notices and Slack messages of a change, in its
/// transaction.
pub(super) async fn notify(
    tx: &mut WriteTx,
    state: &Core,
    widget: &WidgetRow,
    loaded: &dyn Loaded,
    event: &'static str,
    status: WidgetStatus,
) -> AppResult<()> {
    let notified = notified(tx, state).await?;
    queue(tx, state, widget, loaded, (event, status), notified).await
}

/// Commits `tx` with `script` as its last writes and the change's notices
/// after them. Where there is nowhere to send a notice, the script carries
/// the commit (`Script::commit`: on SQLite the end of the write batch
/// member's savepoint rides on its statement, one hop fewer).
pub(super) async fn commit_with(
    mut tx: WriteTx,
    script: Script,
    state: &Core,
    widget: &WidgetRow,
    loaded: &dyn Loaded,
    event: (&'static str, WidgetStatus),
) -> AppResult<()> {
    let notified = notified(&mut tx, state).await?;
    if !notified.webhooks && !notified.slack {
        return Ok(script.commit(tx).await?);
    }
    script.run(&mut tx).await?;
    queue(&mut tx, state, widget, loaded, event, notified).await?;
    Ok(tx.commit().await?)
}

/// [`notify`] where `notified` was read already.
async fn queue(
    tx: &mut WriteTx,
    state: &Core,
    widget: &WidgetRow,
    loaded: &dyn Loaded,
    (event, status): (&'static str, WidgetStatus),
    notified: Notified,
) -> AppResult<()> {
    let notice = crate::webhooks::Notice {
        event,
        session: &widget.session_id,
        widget: widget.id.as_str(),
        kind: &widget.kind,
        status: status.as_str(),
        names: loaded.env_names(),
    };
    if notified.webhooks {
        crate::webhooks::enqueue(tx, &state.settings, &notice).await?;
    }
    match status {
        _ if !notified.slack => Ok(()),
        WidgetStatus::Pending => {
            crate::slack::enqueue_new(tx, &widget.session_id, widget.id.as_str()).await
        }
        _ => Ok(crate::slack::enqueue_update(tx, widget.id.as_str()).await?),
    }
}

/// Where the change may go, as of the request's auth epoch: kept in memory
/// under it, so a deployment without webhooks or Slack asks for neither.
/// Without an epoch read of its own (a background sweep, a Slack click),
/// it is read without the epoch: waiting for an epoch read inside the
/// transaction would, on PostgreSQL, need another connection of the pool
/// the transaction holds one of.
async fn notified(tx: &mut WriteTx, state: &Core) -> sqlx::Result<Notified> {
    let epoch = state.auth_cache.epoch_if_read(state.db.backend());
    if let Some(known) = epoch.and_then(|epoch| state.auth_cache.notified(epoch)) {
        return Ok(known);
    }
    let read = match state.db.backend() {
        // What is committed: the writer's batch may hold another member's
        // deletion that a failed batch undoes, which must not be kept.
        Backend::Sqlite => read_notified(&mut *state.db.read.acquire().await?).await?,
        // Committed rows and this transaction's own, which never change
        // these tables; no second connection.
        Backend::Postgres => read_notified(tx).await?,
    };
    if let Some(epoch) = epoch {
        state.auth_cache.put_notified(epoch, read);
    }
    Ok(read)
}

/// Whether any webhook endpoint, and anyone linked to a connected Slack,
/// exists: one statement.
async fn read_notified(conn: &mut AnyConnection) -> sqlx::Result<Notified> {
    let (webhooks, links, workspaces): (i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM webhook_endpoints), \
         (SELECT count(*) FROM slack_links), (SELECT count(*) FROM slack_workspace)",
    )
    .fetch_one(conn)
    .await?;
    Ok(Notified {
        webhooks: webhooks > 0,
        slack: links > 0 && workspaces > 0,
    })
}
