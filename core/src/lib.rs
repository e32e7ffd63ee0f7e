//! hookrelay-core: every decision hookrelay makes, as plain Rust.
//!
//! This crate has no `worker` dependency and never reads a clock or a random
//! source: callers pass `now` in. The relay and DLQ workers are thin glue that
//! move bytes between the platform and these functions, then carry out the
//! decisions they return. Everything here is tested natively with `cargo test`.
// The stages, in the order a webhook meets them (docs/architecture.md walks
// one webhook through them, step by step, naming each file).

// 1-2. The front door (`POST /webhooks/{source}`) and the signature schemes.
pub mod receive;
pub mod signature;
// 3-4. The `webhooks` consumer: ingest once, then route the whole event.
pub mod ingest;
pub mod route;
// 5-7. Delivery to each destination; after a failure, a retry or a park.
pub mod deliver;
pub mod parking;
pub mod retry;
// 8-10. The DLQ worker: dead letters, replays, and jobs of replays.
pub mod dead_letter;
pub mod jobs;
pub mod replay;
// 11-13. The cron: the archive, the alarms; the admin API's tokens and
// queries; the cron's own duties and leases.
pub mod admin;
pub mod alarms;
pub mod maintenance;
pub mod retention;

// On top: the configuration, which assembles each stage's settings.
pub mod config;

// Underneath, importing no stage: the stored vocabulary (states, codes),
// the counters, and what every stage leans on.
pub mod metrics;
pub mod state;
pub mod support;

/// Milliseconds since the unix epoch, as read once by the platform glue.
pub type UnixMillis = i64;
