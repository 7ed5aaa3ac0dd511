//! Notifications (`widgetd_notify`): signed webhooks and ntfy, and Slack.

pub mod slack;
pub mod webhooks;
