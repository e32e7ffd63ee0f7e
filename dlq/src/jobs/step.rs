//! One step of a job: a bounded slice of its set, paced, then the next step
//! enqueued. A step message whose generation is not the job's is stale (an
//! operator paused, resumed or cancelled it since) and does nothing.

use super::entry::{self, JobContext};
use crate::relay_client::Relay;
use futures_util::future::join_all;
use hookrelay_core::jobs::lifecycle::{next, steps_run_in, Event};
use hookrelay_core::jobs::pacing::{batch_offset_ms, next_due_ms, step_entries};
use hookrelay_core::jobs::{abort, JobRequest, JobStep};
use hookrelay_core::metrics::Component;
use hookrelay_core::state::{JobEntryOutcome, JobStatus};
use hookrelay_platform::db::job_entries::{self, NextEntry};
use hookrelay_platform::db::jobs::{self, Counts, JobRow, Transition};
use hookrelay_platform::{log, now_ms};
use serde_json::json;
use std::time::Duration;
use worker::{D1Database, Delay, Env};

/// What the DLQ worker needs to run a step.
pub struct StepEnv<'a> {
    /// The bindings.
    pub env: &'a Env,
    /// D1.
    pub db: &'a D1Database,
    /// The relay, for replays.
    pub relay: &'a Relay,
    /// Failed replays before an entry is poisoned.
    pub max_replay_attempts: u32,
}

/// Runs one step message.
pub async fn run(s: &StepEnv<'_>, msg: &JobStep) -> worker::Result<()> {
    let Some(mut job) = jobs::get(s.db, &msg.job_id).await? else {
        return Ok(());
    };
    if job.generation != msg.generation || !steps_run_in(job.status) {
        return Ok(());
    }
    let req: JobRequest = serde_json::from_str(&job.spec)?;
    if job.status == JobStatus::Queued {
        let has_canary = !job_entries::canary(s.db, &job.id).await?.is_empty();
        let to =
            next(job.status, Event::Started { has_canary }).map_err(worker::Error::RustError)?;
        if !move_to(s.db, &mut job, to, None, None).await? {
            return Ok(());
        }
    }
    wait_until(msg.due_ms).await;
    let canary_phase = job.status == JobStatus::Canary;
    let slice = job_entries::next(
        s.db,
        &job.id,
        canary_phase,
        step_entries(req.rate_per_s, req.concurrency),
    )
    .await?;
    let handled = work(s, &job, &req, &slice, msg.due_ms).await?;
    let after = after_slice(s.db, &mut job, &req, canary_phase, slice.len()).await?;
    log::info(
        Component::Admin,
        "job_step",
        json!({"job_id": job.id, "status": job.status, "handled": handled, "continue": after}),
    );
    if after {
        let due = next_due_ms(msg.due_ms.max(now_ms() - 1_000), handled, req.rate_per_s);
        super::enqueue(s.env, &job.id, job.generation, due, now_ms()).await?;
    }
    Ok(())
}

async fn wait_until(due_ms: i64) {
    let wait = (due_ms - now_ms()).clamp(0, 5_000);
    if wait > 0 {
        Delay::from(Duration::from_millis(wait as u64)).await;
    }
}

/// Handles the slice in batches of `concurrency`, each started on the
/// pacing schedule, recording each batch's outcomes as it finishes.
async fn work(
    s: &StepEnv<'_>,
    job: &JobRow,
    req: &JobRequest,
    slice: &[NextEntry],
    due_ms: i64,
) -> worker::Result<u32> {
    let mut handled = 0;
    for (index, batch) in slice.chunks(req.concurrency.max(1) as usize).enumerate() {
        if index > 0 {
            wait_until(due_ms + batch_offset_ms(index, req.concurrency, req.rate_per_s)).await;
        }
        let c = JobContext {
            job_id: &job.id,
            actor: &job.actor,
            req,
            relay: s.relay,
            max_replay_attempts: s.max_replay_attempts,
            now_ms: now_ms(),
        };
        let outcomes = join_all(batch.iter().map(|e| entry::handle(s.db, &c, e))).await;
        let mut counts = Counts::default();
        let mut stmts = Vec::new();
        for (e, outcome) in batch.iter().zip(outcomes) {
            let outcome = outcome?;
            match outcome {
                JobEntryOutcome::Succeeded => counts.succeeded += 1,
                JobEntryOutcome::Failed => counts.failed += 1,
                JobEntryOutcome::Deduped => counts.deduped += 1,
                JobEntryOutcome::Skipped => counts.skipped += 1,
            }
            stmts.push(job_entries::done(s.db, &job.id, &e.entry_id, outcome)?);
        }
        stmts.push(jobs::add_counts(s.db, &job.id, counts, now_ms())?);
        s.db.batch(stmts).await?;
        handled += batch.len() as u32;
        if job.status == JobStatus::Canary && counts.failed > 0 {
            break;
        }
    }
    Ok(handled)
}

/// Moves the job on after a slice; whether another step follows.
async fn after_slice(
    db: &D1Database,
    job: &mut JobRow,
    req: &JobRequest,
    canary_phase: bool,
    taken: usize,
) -> worker::Result<bool> {
    if canary_phase {
        let canary = job_entries::canary(db, &job.id).await?;
        if let Some(failed) = canary
            .iter()
            .find(|c| c.outcome == Some(JobEntryOutcome::Failed))
        {
            let reason = format!("canary entry {} failed, so nothing past the canary was touched; read its audit record, fix the cause, then create a new job", failed.entry_id);
            let to = next(job.status, Event::CanaryFailed).map_err(worker::Error::RustError)?;
            move_to(db, job, to, Some(false), Some(&reason)).await?;
            return Ok(false);
        }
        if canary.iter().all(|c| c.outcome.is_some()) {
            let auto = req.approve == hookrelay_core::jobs::Approval::Auto;
            let to =
                next(job.status, Event::CanaryPassed { auto }).map_err(worker::Error::RustError)?;
            return Ok(move_to(db, job, to, Some(true), None).await? && to == JobStatus::Running);
        }
        return Ok(true);
    }
    let fresh = jobs::get(db, &job.id).await?.unwrap_or_else(|| job.clone());
    if let Some(reason) = abort::evaluate(fresh.attempted as u64, fresh.failed as u64, &req.abort) {
        let to = next(job.status, Event::ThresholdCrossed).map_err(worker::Error::RustError)?;
        move_to(db, job, to, None, Some(&reason)).await?;
        return Ok(false);
    }
    if taken == 0 || job_entries::next(db, &job.id, false, 1).await?.is_empty() {
        let to = next(job.status, Event::Finished).map_err(worker::Error::RustError)?;
        move_to(db, job, to, None, None).await?;
        return Ok(false);
    }
    Ok(true)
}

/// A fenced transition; on success `job` follows it. Whether it applied.
async fn move_to(
    db: &D1Database,
    job: &mut JobRow,
    to: JobStatus,
    canary_passed: Option<bool>,
    abort_reason: Option<&str>,
) -> worker::Result<bool> {
    let t = Transition {
        id: &job.id,
        generation: job.generation,
        status: to,
        canary_passed,
        abort_reason,
        finished: hookrelay_core::jobs::lifecycle::is_final(to),
    };
    let applied = jobs::transition(db, &t, now_ms()).await?;
    if applied {
        job.status = to;
        job.generation += 1;
    }
    Ok(applied)
}
