//! Widgets (`widgetd_domain::widgets`, `src/api/widgets`): one file per kind
//! (`env_vars`, `ask`, `approval`, `fields`, `clarification/`), then what
//! every kind shares: its life (expiry, withdraw, replace, listing),
//! dismissal, waiting calls, reads, other systems' payloads, and answers
//! the agent may not give.

pub mod agent_answers;
pub mod approval;
pub mod approval_edit;
pub mod approval_quorum;
pub mod ask;
pub mod clarification;
pub mod dismiss;
pub mod env_vars;
pub mod fields;
pub mod life;
pub mod payloads;
pub mod reads;
pub mod waits;
