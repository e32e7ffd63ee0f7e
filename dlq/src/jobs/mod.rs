//! Durable jobs: bulk replay, archive and discard, advanced one queue
//! message (`hookrelay-jobs`) at a time, with every entry's progress in D1.
//! Nothing loops over the whole set inside one invocation, and a restart of
//! either worker neither repeats a delivery (the relay's delivery leases)
//! nor skips an entry (`job_entries`).

pub mod create;
pub mod error;
pub mod job_entry;
pub mod resume;
pub mod steer;
pub mod step;

use hookrelay_core::jobs::JobStep;
use hookrelay_platform::queue_send::send_json_after;
use worker::Env;

/// Enqueues the step of `job_id` at `generation`, due at `due_ms`.
pub async fn enqueue(
    env: &Env,
    job_id: &str,
    generation: i64,
    due_ms: i64,
    now_ms: i64,
) -> worker::Result<()> {
    let step = JobStep::new(job_id, generation, due_ms);
    let json = serde_json::to_string(&step)?;
    let delay = hookrelay_core::jobs::step_schedule::delay_s(due_ms, now_ms);
    send_json_after(&env.queue("JOBS")?, &json, delay).await
}
