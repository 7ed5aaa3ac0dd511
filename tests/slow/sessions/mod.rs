//! Sessions in Chromium.

pub mod admin;
