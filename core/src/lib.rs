//! hookrelay-core: every decision hookrelay makes, as plain Rust.
//!
//! This crate has no `worker` dependency and never reads a clock or a random
//! source: callers pass `now` in. The relay and DLQ workers are thin glue that
//! move bytes between the platform and these functions, then carry out the
//! decisions they return. Everything here is tested natively with `cargo test`.

pub mod admin_query;
pub mod alarms;
pub mod config;
pub mod internal_token;
pub mod jobs;
pub mod jwt;
pub mod maintenance_schedule;
pub mod metrics;
pub mod parking;
pub mod retention;
pub mod signature;
pub mod state;
pub mod stats_destinations;
pub mod stats_hourly;

/// Milliseconds since the unix epoch, as read once by the platform glue.
pub type UnixMillis = i64;
pub mod dead_letter;
pub mod deliver;
pub mod ingest;
pub mod receive;
pub mod replay;
pub mod retry;
pub mod route;
pub mod support;
