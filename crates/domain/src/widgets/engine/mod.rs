//! The widget engine: the machinery every kind shares.
//!
//! - [`kind`]: the traits a kind implements (`Request`, `Kind`), the
//!   answer's body and who answers, and the registry of kinds.
//! - [`create`]: a widget is born, with its transcript line, event, audit
//!   row and notices in one transaction (its writes sent on a guess, or on
//!   PostgreSQL in groups: `store::guess`, `store::grouped`).
//! - [`lifecycle`]: answering, dismissing, expiry and cancellation, each a
//!   guarded transition out of `pending` (`resolution`) with its prompt;
//!   several approvers' votes (`votes`); the agent's own withdrawals and
//!   replacements ([`life`]).
//! - [`wait`] and [`delivery`]: a call that waits for the answer, and the
//!   acknowledgement of its prompt once it was sent.
//! - [`row`], [`read`], [`store`] and [`cache`]: what a widget is, reading
//!   it, its SQL and how its writes are batched, and the rows kept in
//!   memory.
//! - `notices.rs`: the registered notifiers told of each change.
//! - [`text`]: the checks of text a person or an agent types; [`badge`]:
//!   how an ended widget is worded.

pub mod badge;
pub mod cache;
pub mod create;
pub mod delivery;
pub mod kind;
pub mod life;
pub mod lifecycle;
mod notices;
#[cfg(test)]
mod properties;
pub mod read;
mod resolution;
pub mod row;
pub mod store;
pub mod text;
mod votes;
pub mod wait;
