//! Bulk decisions as durable jobs: what a job asks for, how it moves
//! through its states, which entries its canary takes, when it stops
//! itself, and how its steps are paced. The DLQ worker carries these out,
//! one queue message per step, with progress in D1.

pub mod abort;
pub mod canary;
pub mod lifecycle;
pub mod pacing;
pub mod request;

pub use request::{parse_job_request, Approval, JobFilter, JobRequest};

use serde::{Deserialize, Serialize};

/// The queue message that advances a job by one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobStep {
    /// Always `job_step`.
    pub kind: String,
    /// The job.
    pub job_id: String,
    /// The job's generation when this was sent; a different one is stale.
    pub generation: i64,
    /// When this step is due (unix ms), the anchor of its pacing.
    pub due_ms: i64,
}

/// The `kind` of a job step message.
pub const JOB_STEP_KIND: &str = "job_step";

impl JobStep {
    /// A step of `job_id` at `generation`, due at `due_ms`.
    pub fn new(job_id: &str, generation: i64, due_ms: i64) -> JobStep {
        JobStep {
            kind: JOB_STEP_KIND.to_string(),
            job_id: job_id.to_string(),
            generation,
            due_ms,
        }
    }
}
