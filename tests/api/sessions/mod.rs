//! Sessions (`widgetd_domain::sessions`, `src/api/sessions.rs`,
//! `src/api/events.rs`): creating them, sharing, archiving and revoking,
//! and their event streams.

pub mod admin;
pub mod create;
pub mod events;
pub mod sharing;
