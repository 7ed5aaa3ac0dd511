//! What the tests share, by job, in both test binaries (`tests/api` and,
//! through `#[path]`, `tests/slow`):
//!
//! - `app`: the daemon served in-process ([`TestApp`]), its users, tokens
//!   and sessions, and the HTTP calls tests make to it;
//! - `process`: the real `widgetd` binary and daemons as child processes,
//!   each wait bounded;
//! - `login`: logging in as a browser does over HTTP (the one `login`);
//! - `widgets`: asking (the one `ask`), reading (the one `widget`) and
//!   answering widgets, and the prompts answers leave;
//! - `samples`: widget bodies that a kind's tests in both binaries ask with;
//! - `mcp`: an MCP client as agents' hosts run one;
//! - `slack`: a fake of Slack's Web API;
//! - `wait`: waiting for something to happen ([`eventually`]) rather than
//!   sleeping;
//! - `chrome`: a real headless Chromium, signed in by typing into the page;
//! - `backend`: which database the tests run on (SQLite, or PostgreSQL
//!   with `WIDGETD_TEST_POSTGRES`).

pub mod app;
pub mod backend;
pub mod chrome;
pub mod login;
pub mod mcp;
pub mod process;
pub mod samples;
pub mod slack;
pub mod wait;
pub mod widgets;

// What most tests take from `crate::helpers` directly; each binary uses
// a part of it.
#[allow(unused_imports)]
pub use {app::*, backend::TestDir, backend::test_dir, login::*, process::*, wait::*, widgets::*};
