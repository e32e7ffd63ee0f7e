//! Archive, unarchive and discard of one dead-letter entry: the rule is
//! `core::entry_action::next_status`; this module applies it to D1, audits,
//! counts and logs it. The single-entry routes and jobs (per entry, with
//! their job id) both apply an action here and nowhere else. A discard
//! also erases the entry's archived copies in R2 (an evicted or swept
//! envelope that was restored, or a sweep interrupted between its write and
//! its delete), first, so a failed erasure discards nothing.

use hookrelay_core::dead_letter::entry_action::{next_status, EntryAction};
use hookrelay_core::metrics::{Component, Metric};
use hookrelay_core::retention::restore::archived_copies;
use hookrelay_core::state::{AuditAction, EntryStatus, ReplayOutcome};
use hookrelay_platform::db::changes;
use hookrelay_platform::db::dead_letters::{self, EntrySummary};
use hookrelay_platform::db::replay_audit::{self, AuditRecord};
use hookrelay_platform::{archive_bucket, log, metrics};
use serde::Serialize;
use worker::{D1Database, Env};

/// The log and metric label of an entry action.
const COMPONENT: Component = Component::Admin;

/// Who decides, and why.
pub struct ActionContext<'a> {
    /// The token subject.
    pub actor: &'a str,
    /// The stated reason.
    pub reason: &'a str,
    /// The job, if a job decides.
    pub job_id: Option<&'a str>,
    /// The clock.
    pub now_ms: i64,
    /// The worker's bindings (the R2 archive a discard erases).
    pub env: &'a Env,
}

/// What one action did: `{"id","status","previous_status","action"}`.
#[derive(Debug, Clone, Serialize)]
pub struct ActionResult {
    /// The entry.
    pub id: String,
    /// Its status now.
    pub status: EntryStatus,
    /// Its status before.
    pub previous_status: EntryStatus,
    /// What was decided.
    pub action: AuditAction,
}

/// Why an action changed nothing.
pub type ActionError = crate::entries::change_error::EntryChangeError;

/// Applies `action` to `entry` as it was read: the audit record and the
/// status update (with the payload erasure for a discard) in one batch,
/// both guarded by the status read, so a concurrent change makes neither
/// happen and answers `Refused`.
pub async fn apply(
    db: &D1Database,
    entry: &EntrySummary,
    action: EntryAction,
    ctx: &ActionContext<'_>,
) -> Result<ActionResult, ActionError> {
    let from = entry.status;
    let to = next_status(from, action).map_err(ActionError::Refused)?;
    if action.erases_payload() {
        erase_archived(ctx.env, &entry.id, entry.created_at).await?;
    }
    let audit = AuditRecord {
        entry_id: &entry.id,
        event_id: entry.event_id.as_deref(),
        actor: ctx.actor,
        reason: ctx.reason,
        action: action.action(),
        outcome: ReplayOutcome::Succeeded,
        error: None,
        run_id: None,
        job_id: ctx.job_id,
        at_ms: ctx.now_ms,
    };
    let results = hookrelay_platform::db::batch(
        db,
        vec![
            replay_audit::insert_if_status(db, &audit, from)?,
            dead_letters::set_status_if(db, &entry.id, from, to, action.erases_payload())?,
        ],
    )
    .await?;
    if results.get(1).map_or(0, changes) == 0 {
        return Err(ActionError::Refused(format!(
            "this entry stopped being {from} while the {} was applied (another decision won); read it again and decide once more",
            action.action()
        )));
    }
    let result = ActionResult {
        id: entry.id.clone(),
        status: to,
        previous_status: from,
        action: action.action(),
    };
    report(entry, action, &result, ctx);
    Ok(result)
}

/// Deletes the archived copies of entry `id` (its envelope and its
/// payload); absent ones are fine.
async fn erase_archived(env: &Env, id: &str, created_at: i64) -> Result<(), ActionError> {
    let keys: Vec<String> = archived_copies(id, created_at)
        .iter()
        .map(ToString::to_string)
        .collect();
    archive_bucket::delete(env, &keys).await.map_err(|e| {
        ActionError::Storage(worker::Error::RustError(format!(
            "the archived copies {} could not be erased from R2 ({}); nothing was discarded, try again",
            keys.join(", "),
            hookrelay_platform::db::error_message(&e)
        )))
    })
}

/// The action's counter and its log line (no payload, no reason text:
/// the reason is in the audit record).
fn report(entry: &EntrySummary, action: EntryAction, r: &ActionResult, ctx: &ActionContext<'_>) {
    let source = entry.source.as_deref().unwrap_or("");
    metrics::count(Metric::new(action.metric(), COMPONENT).source(source), 1);
    log::info(
        COMPONENT,
        "entry_decision",
        log::fields! {"id": r.id, "event_id": entry.event_id, "action": r.action, "from": r.previous_status, "to": r.status, "actor": ctx.actor, "job_id": ctx.job_id},
    );
}
