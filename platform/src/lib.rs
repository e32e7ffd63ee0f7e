//! Platform glue shared by the relay and DLQ workers.
//!
//! Everything here moves bytes between the Workers runtime and
//! `hookrelay-core`; none of it decides anything. If a function here grows
//! an `if` about business rules, that rule belongs in the core.

pub mod body;
pub mod breaker_store;
pub mod d1;
pub mod deliveries;
pub mod downstream;
pub mod env_config;
pub mod event_store;
pub mod log;
pub mod metrics;
pub mod pipeline;
pub mod queue_send;

/// The current time in unix milliseconds, read once per request or batch.
pub fn now_ms() -> i64 {
    js_sys::Date::now() as i64
}
