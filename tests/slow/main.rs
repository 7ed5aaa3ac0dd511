//! The slow group: tests that take seconds each or drive other programs —
//! headless Chromium, the real agent CLIs from npm, the real binary under
//! `kill -9` and full disks, PostgreSQL servers restarted and cut, several
//! daemons on one database, and the secret canary at `RUST_LOG=trace`.
//! `cargo test` runs them after `tests/api`; `cargo test --test slow` runs
//! only them, `cargo test --test api` everything else (`tests/README.md`).
//!
//! The folders are those of `tests/api`: a feature's Chromium tests are in
//! the file of the same path here.

// The helpers of `tests/api`, shared: each test binary uses a part of them.
#[allow(dead_code)]
#[path = "../api/helpers/mod.rs"]
mod helpers;

mod agents;
mod db;
mod demo;
mod mcp;
mod secrets;
mod sessions;
mod web;
mod widgets;
