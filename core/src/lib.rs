//! hookrelay-core: every decision hookrelay makes, as plain Rust.
//!
//! This crate has no `worker` dependency and never reads a clock or a random
//! source: callers pass `now` in. The relay and DLQ workers are thin glue that
//! move bytes between the platform and these functions, then carry out the
//! decisions they return. Everything here is tested natively with `cargo test`.

pub mod admin_query;
pub mod alarms;
pub mod attempt;
pub mod base64;
pub mod breaker;
pub mod calendar;
pub mod claim_check;
pub mod config;
pub mod d1_error;
pub mod deliveries;
pub mod delivery_plan;
pub mod disposition;
pub mod dlq_capacity;
pub mod dlq_store_retry;
pub mod downstream_request;
pub mod downstream_response;
pub mod duration;
pub mod entry_action;
pub mod envelope;
pub mod error_code;
pub mod error_signature;
pub mod filter;
pub mod form;
pub mod front_door;
pub mod idempotency;
pub mod ingest_batch;
pub mod internal_token;
pub mod jobs;
pub mod jwt;
pub mod maintenance_schedule;
pub mod metrics;
pub mod pacing;
pub mod parking;
pub mod poison_handoff;
pub mod queue_batch;
pub mod queue_destination;
pub mod queued_event;
pub mod rate_slots;
pub mod redact;
pub mod replay_call;
pub mod replay_plan;
pub mod replay_verdict;
pub mod retention;
pub mod retry_policy;
pub mod root_cause;
pub mod signature;
pub mod signature_limit;
pub mod signature_tally;
pub mod size;
pub mod small_sort;
pub mod state;
pub mod stats_destinations;
pub mod stats_hourly;
mod strict_json;
pub mod subrequests;
pub mod token_identity;
pub mod triage_plan;
pub mod utc;
pub mod vec_map;

/// Milliseconds since the unix epoch, as read once by the platform glue.
pub type UnixMillis = i64;
