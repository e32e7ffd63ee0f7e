//! One step of a job: a bounded slice of its set, paced, then the next step
//! enqueued. The job's generation names the one message that may run its
//! next step: each step hands it on to the message it sends, and an
//! operator's command (pause, resume, cancel, approve) moves it on, so a
//! step message whose generation is not the job's is stale and does
//! nothing. A retry of a step that failed still holds it (the step's own
//! status changes keep it) and runs again. A step looks again before each
//! batch, so a steering command or the abort threshold takes effect within
//! one batch.

use super::job_entry::{self, JobContext};
use crate::entries::relay_client::Relay;
use hookrelay_core::deliver::pacing::Pacer;
use hookrelay_core::jobs::lifecycle::{next, steps_run_in, Event};
use hookrelay_core::jobs::step_schedule::step_entries;
use hookrelay_core::jobs::{abort, slice_end, unique_prefix, JobRequest, JobStep};
use hookrelay_core::metrics::Component;
use hookrelay_core::replay::verdict::{after_batch, AfterBatch, Turn};
use hookrelay_core::state::{JobEntryOutcome, JobStatus};
use hookrelay_platform::db::job_entries::{self, NextEntry};
use hookrelay_platform::db::jobs::{self, JobRow, Transition};
use hookrelay_platform::paced::{run_batch, sleep_until};
use hookrelay_platform::{log, now_ms};
use std::cell::RefCell;
use worker::{D1Database, Env};

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

/// The longest a step waits inside its invocation for its due time: the
/// queue's whole-second delay brings the message at most a second early,
/// plus its batch timeout.
const MAX_EARLY_WAIT_MS: i64 = 5_000;

/// How long a step whose replay met its destination's rate waits before
/// the next step (which takes that entry again).
const OVER_RATE_PAUSE_MS: i64 = 1_000;

/// Why a slice ended early.
enum Halt {
    /// An operator moved the job on (pause, cancel, …): this chain ends.
    Superseded,
    /// The job stopped itself (abort threshold).
    Stopped,
}

/// Runs one step message.
pub async fn run(s: &StepEnv<'_>, msg: &JobStep) -> worker::Result<()> {
    let Some(mut job) = jobs::get(s.db, &msg.job_id).await? else {
        return Ok(());
    };
    if job.generation != msg.generation || !steps_run_in(job.status) {
        superseded(&job, msg.generation);
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
    sleep_until(msg.due_ms.min(now_ms() + MAX_EARLY_WAIT_MS)).await;
    // Starts are spaced from the due time, which the previous step set to
    // one spacing after its last start: the rate holds across steps.
    let pacer = RefCell::new(Pacer::new(Some(req.rate_per_s), msg.due_ms));
    let canary_phase = job.status == JobStatus::Canary;
    let mut slice =
        job_entries::next(s.db, &job.id, canary_phase, step_entries(req.rate_per_s)).await?;
    let hashes: Vec<&str> = slice.iter().map(|e| e.content_hash.as_str()).collect();
    let unique = unique_prefix(&hashes);
    slice.truncate(unique);
    let handled = match work(s, &mut job, &req, &slice, &pacer).await? {
        Ok(handled) => handled,
        Err(Halt::Superseded) => {
            superseded(&job, job.generation);
            return Ok(());
        }
        Err(Halt::Stopped) => return Ok(()),
    };
    let after = after_slice(s.db, &mut job, &req, canary_phase, slice.len()).await?;
    log::info(
        Component::Admin,
        "job_step",
        log::fields! {"job_id": job.id, "status": job.status, "handled": handled, "continue": after},
    );
    if after {
        let due_ms = pacer.borrow().next_at_ms();
        hand_on(s, &job, due_ms).await?;
    }
    Ok(())
}

/// Hands the chain on to the next step message: the generation moves on
/// first (fenced), so a second delivery of this message, or an operator's
/// command meanwhile, leaves exactly one chain. If the send fails, the
/// generation moves back and the error retries this message, which then
/// sends it again.
async fn hand_on(s: &StepEnv<'_>, job: &JobRow, due_ms: i64) -> worker::Result<()> {
    let (now, g) = (now_ms(), job.generation);
    if !jobs::set_generation(s.db, &job.id, g, g + 1, now).await? {
        superseded(job, g);
        return Ok(());
    }
    if let Err(e) = super::enqueue(s.env, &job.id, g + 1, due_ms, now).await {
        jobs::set_generation(s.db, &job.id, g + 1, g, now_ms()).await?;
        return Err(e);
    }
    Ok(())
}

/// The log line of a step that found its job moved on: its chain ends here.
fn superseded(job: &JobRow, generation: i64) {
    log::info(
        Component::Admin,
        "job_step_superseded",
        log::fields! {"job_id": job.id, "status": job.status, "step_generation": generation, "job_generation": job.generation},
    );
}

/// Handles the slice in batches of `concurrency`, each call started when
/// `pacer` allows, recording each batch's outcomes as it finishes. Before
/// each batch it reads the job again: a job an operator moved on, or one
/// past its abort threshold, goes no further.
async fn work(
    s: &StepEnv<'_>,
    job: &mut JobRow,
    req: &JobRequest,
    slice: &[NextEntry],
    pacer: &RefCell<Pacer>,
) -> worker::Result<Result<u32, Halt>> {
    let mut handled = 0;
    let canary_phase = job.status == JobStatus::Canary;
    for batch in slice.chunks(req.concurrency.max(1) as usize) {
        if let Some(halt) = check(s.db, job, req).await? {
            return Ok(Err(halt));
        }
        let c = JobContext {
            job_id: &job.id,
            actor: &job.actor,
            req,
            relay: s.relay,
            max_replay_attempts: s.max_replay_attempts,
            now_ms: now_ms(),
            env: s.env,
        };
        let results = run_batch(pacer, batch, |e| job_entry::handle(s.db, &c, e)).await;
        // Whatever finished is recorded even if another entry of the batch
        // failed on D1: the failed one stays pending and the step is retried.
        let mut outcomes = Vec::with_capacity(batch.len());
        let mut turns = Vec::with_capacity(batch.len());
        let mut first_error = None;
        for (e, result) in batch.iter().zip(results) {
            match result {
                Ok(turn) => {
                    if let Turn::Done(outcome) = turn {
                        outcomes.push((e.entry_id.as_str(), outcome));
                    }
                    // Over the rate: stays pending in the job, taken again.
                    turns.push(turn);
                }
                Err(err) => {
                    first_error.get_or_insert(err);
                }
            }
        }
        if !outcomes.is_empty() {
            let mut stmts = vec![jobs::add_outcomes(s.db, &job.id, &outcomes, now_ms())?];
            for (entry_id, outcome) in &outcomes {
                stmts.push(job_entries::done(s.db, &job.id, entry_id, *outcome)?);
            }
            hookrelay_platform::db::batch(s.db, stmts).await?;
        }
        if let Some(err) = first_error {
            return Err(err);
        }
        handled += outcomes.len() as u32;
        match after_batch(canary_phase, &turns, |o| *o == JobEntryOutcome::Failed) {
            AfterBatch::Next => {}
            AfterBatch::CanaryFailed => break,
            AfterBatch::OverRate => {
                // The destination's shared rate is spent: this step goes no
                // further, and the next one starts a rate-limited wait later.
                pacer.borrow_mut().hold_until(now_ms() + OVER_RATE_PAUSE_MS);
                break;
            }
        }
    }
    Ok(Ok(handled))
}

/// Reads the job again before a batch: whether it must go no further.
async fn check(
    db: &D1Database,
    job: &mut JobRow,
    req: &JobRequest,
) -> worker::Result<Option<Halt>> {
    let Some(fresh) = jobs::get(db, &job.id).await? else {
        return Ok(Some(Halt::Superseded));
    };
    if fresh.generation != job.generation || fresh.status != job.status {
        *job = fresh;
        return Ok(Some(Halt::Superseded));
    }
    if abort_if_over_threshold(db, job, &fresh, req).await? {
        return Ok(Some(Halt::Stopped));
    }
    Ok(None)
}

/// Aborts the job when its counts in `fresh` are past the threshold;
/// whether it did.
async fn abort_if_over_threshold(
    db: &D1Database,
    job: &mut JobRow,
    fresh: &JobRow,
    req: &JobRequest,
) -> worker::Result<bool> {
    let Some(reason) = abort::evaluate(fresh.attempted as u64, fresh.failed as u64, &req.abort)
    else {
        return Ok(false);
    };
    let to = next(job.status, Event::ThresholdCrossed).map_err(worker::Error::RustError)?;
    move_to(db, job, to, None, Some(&reason)).await?;
    Ok(true)
}

/// Moves the job on after a slice, as core's `slice_end` rules decide;
/// whether another step follows.
async fn after_slice(
    db: &D1Database,
    job: &mut JobRow,
    req: &JobRequest,
    canary_phase: bool,
    taken: usize,
) -> worker::Result<bool> {
    let end = if canary_phase {
        let canary = job_entries::canary(db, &job.id).await?;
        let outcomes: Vec<(&str, Option<JobEntryOutcome>)> = canary
            .iter()
            .map(|c| (c.entry_id.as_str(), c.outcome))
            .collect();
        slice_end::after_canary(&outcomes)
    } else {
        let fresh = jobs::get(db, &job.id).await?.unwrap_or_else(|| job.clone());
        if abort_if_over_threshold(db, job, &fresh, req).await? {
            return Ok(false);
        }
        let pending_left = !job_entries::next(db, &job.id, false, 1).await?.is_empty();
        slice_end::after_run(taken, pending_left)
    };
    let Some(event) = end.event(req.approve) else {
        return Ok(true);
    };
    let to = next(job.status, event).map_err(worker::Error::RustError)?;
    let applied = move_to(db, job, to, end.canary_passed(), end.abort_reason()).await?;
    // Only a passed canary with auto-approval goes on to a running step.
    Ok(applied && to == JobStatus::Running)
}

/// A fenced transition; on success `job` follows it. Whether it applied (if
/// not, an operator moved the job on meanwhile and this chain ends).
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
        bump: false,
    };
    let applied = jobs::transition(db, &t, now_ms()).await?;
    if applied {
        job.status = to;
    } else {
        superseded(job, job.generation);
    }
    Ok(applied)
}
