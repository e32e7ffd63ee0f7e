//! Platform glue shared by the relay and DLQ workers.
//!
//! Everything here moves bytes between the Workers runtime and
//! `hookrelay-core` and carries out the decisions the core returns; none of
//! it decides anything. If a function here grows an `if` about business
//! rules, that rule belongs in the core.

pub mod archive_bucket;
pub mod body;
pub mod breaker_store;
pub mod db;
pub mod downstream;
pub mod env_config;
pub mod fetch_answer;
pub mod join;
pub mod log;
pub mod metrics;
pub mod outlined;
pub mod paced;
pub mod parking;
pub mod pipeline;
pub mod poison_send;
pub mod post_request;
pub mod queue_destination;
pub mod queue_dispatch;
pub mod queue_message;
pub mod queue_send;
pub mod rate_turn;
pub mod raw_http;
pub mod signature_limit_binding;
pub mod test_faults;
pub mod token_keys;
pub mod webcrypto;

/// The current time in unix milliseconds. Read once per request or batch,
/// and again wherever an outbound request is signed, so a paced request
/// never carries a stale timestamp.
pub fn now_ms() -> i64 {
    js_sys::Date::now() as i64
}
