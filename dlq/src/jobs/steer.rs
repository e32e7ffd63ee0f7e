//! `POST /jobs/:id/{approve,pause,resume,cancel}`: an operator steering a
//! job. Each is a fenced transition, so it takes effect within one step: a
//! step already in flight finds the generation moved on and stops.

use super::create::view;
use super::error::{JobError, JobResult};
use hookrelay_core::jobs::lifecycle::{is_final, next, Event};
use hookrelay_core::state::{JobCommand, JobStatus};
use hookrelay_platform::db::job_entries;
use hookrelay_platform::db::jobs::{self, Transition};
use worker::{D1Database, Env};

/// Applies one steering command and answers the job as it is now.
pub async fn steer(db: &D1Database, env: &Env, id: &str, segment: &str, now: i64) -> JobResult {
    let job = jobs::get(db, id)
        .await?
        .ok_or_else(|| JobError::NotFound(format!("no job '{id}'")))?;
    let canary = job_entries::canary(db, id).await?;
    // Past the canary only once a step saw it pass (and, with manual
    // approval, an operator approved it): a job paused while its last canary
    // entries finished goes back to its canary, whose next step passes or
    // aborts it, so a resume never skips the approval.
    let canary_done = canary.is_empty() || job.canary_passed == Some(1);
    let command = JobCommand::parse(segment).map_err(|_| {
        JobError::NotFound(format!("no such job command; use {}", JobCommand::names()))
    })?;
    let event = Event::of_command(command, canary_done);
    let to = next(job.status, event).map_err(JobError::Conflict)?;
    let t = Transition {
        id,
        generation: job.generation,
        status: to,
        canary_passed: None,
        abort_reason: None,
        finished: is_final(to),
        bump: true,
    };
    if !jobs::transition(db, &t, now).await? {
        return Err(JobError::Conflict(
            "the job changed while this command ran; read it again and retry".into(),
        ));
    }
    if matches!(to, JobStatus::Running | JobStatus::Canary) {
        super::enqueue(env, id, job.generation + 1, now, now).await.map_err(|e| {
            JobError::NotQueued(format!("the job moved to {to} but its next step could not be queued ({e}); it resumes on its own within a minute"))
        })?;
    }
    let job = jobs::get(db, id)
        .await?
        .ok_or_else(|| JobError::NotFound(format!("no job '{id}'")))?;
    Ok(view(&job, &canary))
}
