//! Running widgetd (`src/ops.rs`, `contrib/`, `docs/operations.md`): health,
//! readiness and metrics, the documented procedures, the unit file, a TLS
//! proxy in front, and shutting down under load.

pub mod docs;
pub mod health;
pub mod proxy;
pub mod shutdown;
pub mod unit_file;
