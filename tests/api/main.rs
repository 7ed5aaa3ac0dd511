//! Integration tests: a real SQLite file per test, real HTTP on a real port,
//! and the real `widgetd` binary where the command line is under test.

mod approvals;
mod authz;
mod backend;
mod backup;
mod browser;
mod canary;
mod clarification;
mod cli;
mod connect;
mod corruption;
mod demo;
mod dismiss;
mod env_api;
mod exec;
mod faults;
mod group_commit;
mod helpers;
mod hooks;
mod host;
mod limits;
mod mcp;
mod ops;
mod questions;
mod replies;
mod scale_out;
mod session_admin;
mod sessions;
mod sharing;
mod shutdown;
mod streams;
mod throughput;
mod vault;
mod webdriver;
mod webhooks;
mod widgets;
