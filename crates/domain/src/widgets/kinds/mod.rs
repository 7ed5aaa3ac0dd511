//! The widget kinds: each module declares what differs between kinds (the
//! agent's input and its checks, what a person's answer is, what it does
//! and yields, the resume prompt, the badge) by implementing the engine's
//! `Request` and `Kind` (`engine::kind`), and nothing else. A new kind is
//! a module here and an entry in the registry (`engine::kind::KINDS`).

pub mod approval;
pub mod ask;
pub mod clarification;
pub mod env_vars;
pub mod fields;

pub use approval::Approval;
pub use ask::{Ask, AskUser, Questions};
pub use clarification::Clarification;
pub use env_vars::EnvVars;
pub use fields::Fields;
