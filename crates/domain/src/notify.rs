//! Where a widget's change goes besides the transcript, as the engine sees
//! it: a list of [`Notifier`]s registered in [`Core`] by whoever builds it
//! (the server registers webhooks and Slack, from the `widgetd-notify`
//! crate). The engine tells each of them a [`Change`] inside the change's
//! transaction, so a notice is queued (an outbox row) exactly when the
//! change commits; each notifier's own task sends what it queued.
//!
//! Whether any notifier has anywhere to send at all is read in one
//! statement and kept under the auth epoch ([`Wanted`], in the auth
//! cache): a deployment with no webhook endpoint and no Slack link asks
//! for nothing on a widget's change.

use std::sync::Arc;

use async_trait::async_trait;

use crate::Core;
use crate::db::WriteTx;
use crate::error::Result;
use crate::ids::SessionId;
use crate::widgets::engine::row::WidgetStatus;

/// A widget's change, as a notifier is told of it. Never a value.
pub struct Change<'a> {
    /// `widget.created` or `widget.resolved`.
    pub event: &'static str,
    pub session: &'a SessionId,
    pub widget: &'a str,
    /// Its `widgets.kind`.
    pub kind: &'a str,
    /// The status it reached (`pending` when it was created).
    pub status: WidgetStatus,
    /// Env var names, for `env_vars` widgets.
    pub names: Option<Vec<String>>,
}

/// Somewhere a widget's change may be sent.
#[async_trait]
pub trait Notifier: Send + Sync + 'static {
    /// An SQL expression, valid in a `SELECT` of both backends, that is
    /// non-zero exactly when this notifier has somewhere to send (`(SELECT
    /// count(*) FROM webhook_endpoints)`). The tables it reads must bump
    /// the auth epoch when they change (`auth::bump_epoch`).
    fn targets_sql(&self) -> &'static str;

    /// Queues `change` inside its transaction. Called only while
    /// [`Notifier::targets_sql`] said there is somewhere to send. An error
    /// rolls the change back.
    async fn enqueue(&self, tx: &mut WriteTx, core: &Core, change: &Change<'_>) -> Result<()>;
}

/// The registered notifiers, in the order they were added.
#[derive(Clone, Default)]
pub struct Notifiers(Vec<Arc<dyn Notifier>>);

impl Notifiers {
    /// Adds `notifier`; at most 64.
    pub fn add(&mut self, notifier: Arc<dyn Notifier>) {
        assert!(self.0.len() < 64, "at most 64 notifiers");
        self.0.push(notifier);
    }

    /// Whether none is registered.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The statement that reads every notifier's [`Notifier::targets_sql`]
    /// at once, one column each.
    pub(crate) fn targets_statement(&self) -> String {
        let columns: Vec<String> = self
            .0
            .iter()
            .map(|n| format!("CAST({} AS BIGINT)", n.targets_sql()))
            .collect();
        format!("SELECT {}", columns.join(", "))
    }

    /// The notifiers `wanted` says have somewhere to send.
    pub(crate) fn wanted(&self, wanted: Wanted) -> impl Iterator<Item = &dyn Notifier> {
        self.0
            .iter()
            .enumerate()
            .filter(move |(i, _)| wanted.has(*i))
            .map(|(_, n)| n.as_ref())
    }
}

/// Which notifiers have somewhere to send, one bit each by their place
/// in [`Notifiers`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Wanted(u64);

impl Wanted {
    /// From each notifier's count, in order.
    pub fn from_counts(counts: impl IntoIterator<Item = i64>) -> Self {
        Self(
            counts
                .into_iter()
                .enumerate()
                .filter(|(_, count)| *count > 0)
                .fold(0, |bits, (i, _)| bits | 1 << i),
        )
    }

    /// Whether any notifier has somewhere to send.
    pub fn any(self) -> bool {
        self.0 != 0
    }

    fn has(self, i: usize) -> bool {
        self.0 & 1 << i != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wanted_keeps_each_count_in_its_place() {
        let wanted = Wanted::from_counts([0, 3, 0, 1]);
        assert!(wanted.any());
        assert!(!wanted.has(0) && wanted.has(1) && !wanted.has(2) && wanted.has(3));
        assert!(!Wanted::from_counts([0, 0]).any());
        assert!(!Wanted::from_counts([]).any());
    }
}
