//! widgetd's domain: everything the daemon does that is not HTTP, MCP or a
//! page. Agents ask for input through widgets ([`widgets`]); people answer
//! them; values go to the vault ([`secrets`]) and never back to the agent;
//! what happened reaches the agent as resume prompts ([`prompts`]) and
//! everyone else as events ([`events`]) and the audit log ([`audit`]).
//!
//! The crate does not depend on axum, hyper, tower, rmcp or askama: the
//! server crate on top maps [`Error`] to its answers, draws the cards and
//! speaks the protocols. Integrations (webhooks, Slack) are [`notify`]
//! implementations the server registers in [`Core`]; the engine does not
//! know them.

pub mod access;
pub mod audit;
pub mod auth;
pub mod clock;
pub mod core;
pub mod crypto;
pub mod db;
pub mod error;
pub mod events;
pub mod health;
pub mod ids;
pub mod input;
pub mod jobs;
pub mod limits;
pub mod notify;
pub mod progress;
pub mod prompts;
pub mod secrets;
pub mod sessions;
pub mod startup;
#[cfg(test)]
mod testing;
pub mod transcript;
pub mod widgets;

pub use crate::core::{Core, Settings};
pub use crate::error::{Error, Result};
