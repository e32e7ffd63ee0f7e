//! How long a queue message waits when the step it carries could not run
//! at all: a configuration that does not load, a binding that is missing,
//! a step that failed or found its lease held, a batch no consumer takes.
//! Each wait is named for its situation, so the workers apply a decided
//! value and hold no delay of their own. An ingest's and a delivery's
//! retries are the schedule ([`super::policy`]) applied by the disposition
//! ([`super::disposition`]); these are the control, jobs and triage
//! queues' own waits, and none of them spends a retry budget that matters:
//! each message's progress is in D1, so a retry repeats nothing finished.

/// The relay's control queue while its configuration does not load: time
/// for a corrected one to be deployed (the `config_invalid` log line names
/// the key).
pub const CONFIG_INVALID_RETRY_S: u32 = 60;
/// The DLQ worker's triage while its configuration does not load: a dead
/// letter must never be dropped, so it waits and comes back.
pub const TRIAGE_CONFIG_INVALID_RETRY_S: u32 = 30;
/// A drain step that failed, or found no D1 binding.
pub const DRAIN_STEP_RETRY_S: u32 = 5;
/// A sweep step that failed.
pub const SWEEP_STEP_RETRY_S: u32 = 10;
/// A sweep step that found the maintenance lease held by another run.
pub const SWEEP_BUSY_RETRY_S: u32 = 5;
/// A batch from a queue no consumer of this worker is configured for
/// (time for a corrected configuration to be deployed).
pub const UNROUTED_RETRY_S: u32 = 60;
/// A job step whose configuration or D1 binding is missing: the first of a
/// growing wait (`dead_letter::store_retry::store_retry_delay_s`).
pub const JOB_UNCONFIGURED_RETRY_BASE_S: u32 = 5;
/// A job step whose relay binding is missing: the first of a growing wait.
pub const JOB_NO_RELAY_RETRY_BASE_S: u32 = 30;
