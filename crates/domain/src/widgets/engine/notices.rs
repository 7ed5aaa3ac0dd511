//! Where a widget's change goes besides the transcript: every registered
//! notifier (`crate::notify`) that has somewhere to send is told the
//! change in its transaction. Whether any has is kept in the auth cache
//! under the auth epoch ([`Wanted`]), so a deployment with nowhere to send
//! asks for nothing.

use super::kind::Loaded;
use crate::Core;
use crate::db::{Script, WriteTx};
use crate::error::Result;
use crate::notify::{Change, Wanted};
use crate::widgets::engine::row::{WidgetRow, WidgetStatus};

/// Tells the notifiers of a change, in its transaction.
pub(super) async fn notify(
    tx: &mut WriteTx,
    state: &Core,
    widget: &WidgetRow,
    loaded: &dyn Loaded,
    event: &'static str,
    status: WidgetStatus,
) -> Result<()> {
    let wanted = wanted(tx, state).await?;
    queue(tx, state, widget, loaded, (event, status), wanted).await
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
) -> Result<()> {
    let wanted = wanted(&mut tx, state).await?;
    if !wanted.any() {
        return Ok(script.commit(tx).await?);
    }
    script.run(&mut tx).await?;
    queue(&mut tx, state, widget, loaded, event, wanted).await?;
    Ok(tx.commit().await?)
}

/// [`notify`] where `wanted` was read already.
async fn queue(
    tx: &mut WriteTx,
    state: &Core,
    widget: &WidgetRow,
    loaded: &dyn Loaded,
    (event, status): (&'static str, WidgetStatus),
    wanted: Wanted,
) -> Result<()> {
    let change = Change {
        event,
        session: &widget.session_id,
        widget: widget.id.as_str(),
        kind: &widget.kind,
        status,
        names: loaded.env_names(),
    };
    for notifier in state.notifiers.wanted(wanted) {
        notifier.enqueue(tx, state, &change).await?;
    }
    Ok(())
}

/// Which notifiers have somewhere to send, as of the request's auth epoch:
/// kept in memory under it, so a deployment with nowhere to send asks for
/// nothing. Without an epoch read of its own (a background sweep, a Slack
/// click), it is read without the epoch: waiting for an epoch read inside
/// the transaction would, on PostgreSQL, need another connection of the
/// pool the transaction holds one of.
async fn wanted(tx: &mut WriteTx, state: &Core) -> sqlx::Result<Wanted> {
    if state.notifiers.is_empty() {
        return Ok(Wanted::default());
    }
    let epoch = state.auth_cache.epoch_if_read(state.db.backend());
    if let Some(known) = epoch.and_then(|epoch| state.auth_cache.notified(epoch)) {
        return Ok(known);
    }
    let statement = state.notifiers.targets_statement();
    let read = if tx.dialect().sql().writes_in_batches() {
        // What is committed: the writer's batch may hold another member's
        // deletion that a failed batch undoes, which must not be kept.
        read_wanted(&mut *state.db.read.acquire().await?, &statement).await?
    } else {
        // Committed rows and this transaction's own, which never change
        // these tables; no second connection.
        read_wanted(tx, &statement).await?
    };
    if let Some(epoch) = epoch {
        state.auth_cache.put_notified(epoch, read);
    }
    Ok(read)
}

/// Each notifier's count of targets: one statement.
async fn read_wanted(conn: &mut sqlx::AnyConnection, statement: &str) -> sqlx::Result<Wanted> {
    use sqlx::Row;
    let row = sqlx::query(statement).fetch_one(conn).await?;
    let counts = (0..row.len())
        .map(|i| row.try_get::<i64, _>(i))
        .collect::<sqlx::Result<Vec<i64>>>()?;
    Ok(Wanted::from_counts(counts))
}
