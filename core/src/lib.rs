//! hookrelay-core: every decision hookrelay makes, as plain Rust.
//!
//! This crate has no `worker` dependency and never reads a clock or a random
//! source: callers pass `now` in. The relay and DLQ workers are thin glue that
//! move bytes between the platform and these functions, then carry out the
//! decisions they return. Everything here is tested natively with `cargo test`.
pub mod alarms;
pub mod config;
pub mod jobs;
pub mod metrics;
pub mod parking;
pub mod retention;
pub mod signature;
pub mod state;

/// Milliseconds since the unix epoch, as read once by the platform glue.
pub type UnixMillis = i64;
pub mod admin;
pub mod dead_letter;
pub mod deliver;
pub mod ingest;
pub mod maintenance;
pub mod receive;
pub mod replay;
pub mod retry;
pub mod route;
pub mod support;
