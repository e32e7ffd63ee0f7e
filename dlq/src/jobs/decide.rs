//! A job's archive or discard of one entry: the core's transition, applied
//! with its audit record carrying the job id.

use super::entry::JobContext;
use crate::replay::ReplayContext;
use hookrelay_core::entry_decision::{decide, Decision};
use hookrelay_core::state::{JobAction, JobEntryOutcome, ReplayOutcome};
use hookrelay_platform::db::dead_letters::{self, EntryRow};
use hookrelay_platform::db::{changes, replay_audit};
use worker::D1Database;

/// Applies the job's decision to `entry`; an entry the rule refuses, or one
/// that changed meanwhile, is skipped.
pub async fn apply(
    db: &D1Database,
    entry: &EntryRow,
    c: &JobContext<'_>,
    ctx: &ReplayContext<'_>,
) -> worker::Result<JobEntryOutcome> {
    let decision = match c.req.action {
        JobAction::Archive => Decision::Archive,
        _ => Decision::Discard,
    };
    let s = &entry.summary;
    let Ok(to) = decide(s.status, decision) else {
        return Ok(JobEntryOutcome::Skipped);
    };
    let mut audit = ctx.audit(&s.id, s.event_id.as_deref(), ReplayOutcome::Succeeded, None);
    audit.action = decision.action();
    let results = hookrelay_platform::db::batch(
        db,
        vec![
            dead_letters::set_status_if(db, &s.id, s.status, to, decision.erases_payload())?,
            replay_audit::insert(db, &audit)?,
        ],
    )
    .await?;
    Ok(if results.first().map_or(0, changes) > 0 {
        JobEntryOutcome::Succeeded
    } else {
        JobEntryOutcome::Skipped
    })
}
