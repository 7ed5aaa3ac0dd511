//! The store under load and faults: the real binary on a disk that fills
//! up or turns read-only, and under `kill -9`; two daemons on PostgreSQL
//! while their connections are cut and the server restarts; several
//! daemons on one database.

pub mod faults;
pub mod faults_postgres;
pub mod pg_server;
pub mod scale_out;
pub mod throughput;
