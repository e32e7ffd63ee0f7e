//! Bulk decisions as durable jobs: what a job asks for, how it moves
//! through its states, which entries its canary takes, when it stops
//! itself, and how its steps are paced. The DLQ worker carries these out,
//! one queue message per step, with progress in D1.

pub mod abort;
pub mod canary;
pub mod lifecycle;
pub mod request;
pub mod slice_end;
pub mod step_schedule;

pub use request::{parse_job_request, Approval, JobFilter, JobRequest};

use serde::{Deserialize, Serialize};

/// How many entries at the front of a step's slice (their content hashes,
/// in line order) run in this step: up to the first payload already in the
/// slice. An identical payload waits for the next step, which knows whether
/// the first one succeeded (then it is `deduped`) or not (then it is
/// replayed in its own right). Always at least one entry of a non-empty
/// slice.
pub fn unique_prefix(hashes: &[&str]) -> usize {
    let mut seen = std::collections::HashSet::new();
    hashes
        .iter()
        .position(|h| !seen.insert(*h))
        .unwrap_or(hashes.len())
}

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

#[cfg(test)]
mod tests {
    use super::unique_prefix;

    #[test]
    fn a_step_stops_before_a_payload_it_already_holds() {
        let table: [(&[&str], usize); 5] = [
            (&[], 0),
            (&["a"], 1),
            (&["a", "b", "c"], 3),
            (&["a", "b", "a", "c"], 2),
            (&["a", "a"], 1),
        ];
        for (hashes, want) in table {
            assert_eq!(unique_prefix(hashes), want, "{hashes:?}");
        }
    }
}
