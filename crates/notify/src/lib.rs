//! Where a widget's change goes besides the transcript: signed webhooks
//! ([`webhooks`]: Standard Webhooks, Slack-formatted or ntfy bodies) and
//! Slack messages with buttons ([`slack`]). Each is a
//! `widgetd_domain::notify::Notifier` the server registers in the domain's
//! `Core`, so the widget engine tells them of a change without knowing
//! them; each queues its outbox rows in the change's transaction and has
//! its own task that sends them.

pub mod slack;
pub mod webhooks;

use std::sync::Arc;

use widgetd_domain::notify::Notifiers;

/// Both notifiers, for `Core::with_notifiers`.
pub fn notifiers() -> Notifiers {
    let mut notifiers = Notifiers::default();
    notifiers.add(Arc::new(webhooks::Webhooks));
    notifiers.add(Arc::new(slack::Slack));
    notifiers
}
