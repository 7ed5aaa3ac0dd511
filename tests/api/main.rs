//! Integration tests: a real SQLite file per test, real HTTP on a real port,
//! and the real `widgetd` binary where the command line is under test.
//!
//! One folder per area of the code (`tests/README.md` has the map); what
//! the tests share is in `helpers/`.

mod auth;
mod cli;
mod connect;
mod db;
mod demo;
mod exec;
// Shared with tests/slow, which uses the parts this binary does not.
#[allow(dead_code)]
mod helpers;
mod hooks;
mod host;
mod mcp;
mod notify;
mod ops;
mod secrets;
mod sessions;
mod web;
mod widgets;
