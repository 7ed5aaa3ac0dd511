//! The store (`widgetd_domain::db`): SQLite's group commit and writer pipe,
//! PostgreSQL's concurrent writers and several daemons on one database,
//! `db copy`, backup and restore, corruption, upgrades, full disks and cut
//! connections.

pub mod backup;
pub mod copy;
pub mod corruption;
pub mod group_commit;
pub mod pg_concurrency;
pub mod pipe;
pub mod upgrade;
