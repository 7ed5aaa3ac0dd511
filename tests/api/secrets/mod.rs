//! Secrets (`widgetd_domain::secrets`, `src/api/env.rs`): the env API, the
//! encrypted vault, and the canary that must reach only the executor path.

pub mod env_api;
pub mod vault;
