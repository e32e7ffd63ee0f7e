//! What a job does to one entry of its set.

use crate::entries::apply_action::{apply, ActionContext, ActionError};
use crate::entries::relay_client::Relay;
use crate::entries::replay::{replay_entry, ReplayContext, ReplayError};
use hookrelay_core::dead_letter::entry_action::EntryAction;
use hookrelay_core::jobs::JobRequest;
use hookrelay_core::replay::call::RefusalCode;
use hookrelay_core::replay::verdict::Turn;
use hookrelay_core::state::error_code::{ErrorCode, Failure};
use hookrelay_core::state::{EntryStatus, JobEntryOutcome, ReplayOutcome};
use hookrelay_platform::db::dead_letters::{self, EntryRow};
use hookrelay_platform::db::job_entries::NextEntry;
use hookrelay_platform::db::Query;
use hookrelay_platform::db::{changes, replay_audit};
use worker::D1Database;

/// The job-wide context of its entries.
pub struct JobContext<'a> {
    /// The job.
    pub job_id: &'a str,
    /// Who created it (the actor of every decision).
    pub actor: &'a str,
    /// Its request.
    pub req: &'a JobRequest,
    /// The relay, for replays.
    pub relay: &'a Relay,
    /// Failed replays before an entry is poisoned.
    pub max_replay_attempts: u32,
    /// The clock.
    pub now_ms: i64,
    /// The worker's bindings (the R2 archive a discard erases).
    pub env: &'a worker::Env,
}

/// Whether an entry is still eligible: in the status the job's filter names.
fn eligible(status: EntryStatus, req: &JobRequest) -> bool {
    req.filter.entries.status == Some(status)
}

/// What a job did with one entry: the rule replay-all shares
/// (`hookrelay_core::replay::verdict::Turn`): over its destination's rate,
/// nothing changed, the entry stays pending in the job and a later step
/// takes it again; not a failure.
pub type Handled = Turn<JobEntryOutcome>;

/// Handles one entry; a D1 failure is an error, so the step is retried and
/// the entry, still pending in `job_entries`, is handled again.
pub async fn handle(
    db: &D1Database,
    c: &JobContext<'_>,
    next: &NextEntry,
) -> worker::Result<Handled> {
    let done = |o: worker::Result<JobEntryOutcome>| o.map(Turn::Done);
    // Handled by this job already (its audit record was written with the
    // change), but the step failed before recording it: not done again.
    if let Some(outcome) = next.audited {
        return Ok(Turn::Done(match outcome {
            ReplayOutcome::Succeeded => JobEntryOutcome::Succeeded,
            ReplayOutcome::Deduped => JobEntryOutcome::Deduped,
            ReplayOutcome::Failed | ReplayOutcome::Poisoned => JobEntryOutcome::Failed,
        }));
    }
    let Some(entry) = dead_letters::get(db, &next.entry_id).await? else {
        return Ok(Turn::Done(JobEntryOutcome::Skipped));
    };
    if !eligible(entry.summary.status, c.req) {
        return Ok(Turn::Done(JobEntryOutcome::Skipped));
    }
    if let Some(action) = EntryAction::of_job(c.req.action) {
        return done(apply_action(db, &entry, action, c).await);
    }
    let ctx = ReplayContext {
        actor: c.actor,
        reason: &c.req.reason,
        run_id: None,
        job_id: Some(c.job_id),
        max_replay_attempts: c.max_replay_attempts,
        now_ms: c.now_ms,
    };
    if next.duplicate == 1 {
        done(close_duplicate(db, &entry, c, &ctx).await)
    } else {
        replay(db, &entry, c, &ctx).await
    }
}

/// Archives or discards one entry through the single-entry routes' path
/// (audited, counted and logged the same way, with the job id). An entry
/// the rule refuses, or one that changed meanwhile, is skipped, and then
/// no audit record is written for it.
async fn apply_action(
    db: &D1Database,
    entry: &EntryRow,
    action: EntryAction,
    c: &JobContext<'_>,
) -> worker::Result<JobEntryOutcome> {
    let ctx = ActionContext {
        actor: c.actor,
        reason: &c.req.reason,
        job_id: Some(c.job_id),
        now_ms: c.now_ms,
        env: c.env,
    };
    match apply(db, &entry.summary, action, &ctx).await {
        Ok(_) => Ok(JobEntryOutcome::Succeeded),
        Err(ActionError::Refused(_) | ActionError::RefusedAs(..)) => Ok(JobEntryOutcome::Skipped),
        Err(ActionError::Storage(e)) => Err(e),
    }
}

/// An entry whose payload already succeeded in this job: closed as
/// replayed without sending it again.
async fn close_duplicate(
    db: &D1Database,
    entry: &EntryRow,
    c: &JobContext<'_>,
    ctx: &ReplayContext<'_>,
) -> worker::Result<JobEntryOutcome> {
    let s = &entry.summary;
    let audit = ctx.audit(&s.id, s.event_id.as_deref(), ReplayOutcome::Deduped, None);
    let results = hookrelay_platform::db::batch(
        db,
        vec![
            dead_letters::close_as_deduped_from(db, &s.id, s.status, c.now_ms)?,
            replay_audit::insert(db, &audit)?,
        ],
    )
    .await?;
    Ok(if results.first().map_or(0, changes) > 0 {
        JobEntryOutcome::Deduped
    } else {
        JobEntryOutcome::Skipped
    })
}

/// Replays one entry through the relay.
async fn replay(
    db: &D1Database,
    entry: &EntryRow,
    c: &JobContext<'_>,
    ctx: &ReplayContext<'_>,
) -> worker::Result<Handled> {
    match replay_entry(db, c.relay, entry, ctx).await {
        Ok(r) if r.outcome.succeeded() => Ok(Turn::Done(JobEntryOutcome::Succeeded)),
        Ok(_) => Ok(Turn::Done(JobEntryOutcome::Failed)),
        Err(ReplayError::RefusedAs(RefusalCode::RateLimited, _)) => Ok(Turn::OverRate),
        Err(ReplayError::Refused(why) | ReplayError::RefusedAs(_, why)) => {
            // The relay refused it and nothing about the entry changed; the
            // job still records why it counts as failed.
            let code = ErrorCode::parse(&entry.summary.error_code).unwrap_or(ErrorCode::Unknown);
            let failure = Failure::new(code, format!("refused: {why}"));
            let audit = ctx.audit(
                &entry.summary.id,
                entry.summary.event_id.as_deref(),
                ReplayOutcome::Failed,
                Some(&failure),
            );
            replay_audit::insert(db, &audit)?.query().await?;
            Ok(Turn::Done(JobEntryOutcome::Failed))
        }
        Err(ReplayError::Storage(e)) => Err(e),
    }
}
