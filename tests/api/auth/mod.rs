//! Who may do what (`widgetd_domain::auth`, `widgetd_domain::access`): the
//! authorization matrix, the daemon's cache of it, and abuse limits.

pub mod access;
pub mod cache;
pub mod limits;
