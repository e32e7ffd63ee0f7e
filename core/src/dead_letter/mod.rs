//! Stage 8, dead letters (the DLQ worker's `webhooks-dlq` consumer and its
//! entries): the envelope an on-call engineer debugs from, the triage that
//! stores a batch of them in one plan, capacity and eviction, the error
//! signature that groups them, the root cause they name, how long a dead
//! letter that cannot be stored waits, and the actions on one entry.

pub mod arrivals;
pub mod capacity;
pub mod entry_action;
pub mod envelope;
pub mod error_signature;
pub mod root_cause;
pub mod store_retry;
pub mod triage;
