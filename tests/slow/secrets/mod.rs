//! The canary: a unique value that must reach the executor path and
//! nothing else, on the real binary at `RUST_LOG=trace`.

pub mod canary;
pub mod canary_trace;
