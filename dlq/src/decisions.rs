//! Archive, unarchive and discard of one dead-letter entry: the rule is
//! `core::entry_decision::decide`; this module applies it to D1 and counts
//! it. Jobs apply the same function per entry, with their job id.

use hookrelay_core::entry_decision::{decide, Decision};
use hookrelay_core::metrics::{Component, Metric};
use hookrelay_core::state::{AuditAction, EntryStatus, ReplayOutcome};
use hookrelay_platform::db::changes;
use hookrelay_platform::db::dead_letters::{self, EntrySummary};
use hookrelay_platform::db::replay_audit::{self, AuditRecord};
use hookrelay_platform::{log, metrics};
use serde::Serialize;
use worker::D1Database;

/// The log and metric label of a decision.
const COMPONENT: Component = Component::Admin;

/// Who decides, and why.
pub struct DecisionContext<'a> {
    /// The token subject.
    pub actor: &'a str,
    /// The stated reason.
    pub reason: &'a str,
    /// The job, if a job decides.
    pub job_id: Option<&'a str>,
    /// The clock.
    pub now_ms: i64,
}

/// What one decision did: `{"id","status","previous_status","action"}`.
#[derive(Debug, Clone, Serialize)]
pub struct DecisionResult {
    /// The entry.
    pub id: String,
    /// Its status now.
    pub status: EntryStatus,
    /// Its status before.
    pub previous_status: EntryStatus,
    /// What was decided.
    pub action: AuditAction,
}

/// Why a decision changed nothing.
#[derive(Debug)]
pub enum DecisionError {
    /// The rule refuses it from the entry's status, or a concurrent
    /// decision changed the status first (the 409 message).
    Refused(String),
    /// D1 could not apply it.
    Storage(worker::Error),
}

impl From<worker::Error> for DecisionError {
    fn from(e: worker::Error) -> Self {
        DecisionError::Storage(e)
    }
}

/// Applies `decision` to `entry` as it was read: the audit record and the
/// status update (with the payload erasure for a discard) in one batch,
/// both guarded by the status read, so a concurrent change makes neither
/// happen and answers `Refused`.
pub async fn apply(
    db: &D1Database,
    entry: &EntrySummary,
    decision: Decision,
    ctx: &DecisionContext<'_>,
) -> Result<DecisionResult, DecisionError> {
    let from = entry.status;
    let to = decide(from, decision).map_err(DecisionError::Refused)?;
    let audit = AuditRecord {
        entry_id: &entry.id,
        event_id: entry.event_id.as_deref(),
        actor: ctx.actor,
        reason: ctx.reason,
        action: decision.action(),
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
            dead_letters::set_status_if(db, &entry.id, from, to, decision.erases_payload())?,
        ],
    )
    .await?;
    if results.get(1).map_or(0, changes) == 0 {
        return Err(DecisionError::Refused(format!(
            "this entry stopped being {from} while the {} was applied (another decision won); read it again and decide once more",
            decision.action()
        )));
    }
    let result = DecisionResult {
        id: entry.id.clone(),
        status: to,
        previous_status: from,
        action: decision.action(),
    };
    report(entry, decision, &result, ctx);
    Ok(result)
}

/// The decision's counter and its log line (no payload, no reason text:
/// the reason is in the audit record).
fn report(entry: &EntrySummary, decision: Decision, r: &DecisionResult, ctx: &DecisionContext<'_>) {
    let source = entry.source.as_deref().unwrap_or("");
    metrics::count(Metric::new(decision.metric(), COMPONENT).source(source), 1);
    log::info(
        COMPONENT,
        "entry_decision",
        log::fields! {"id": r.id, "event_id": entry.event_id, "action": r.action, "from": r.previous_status, "to": r.status, "actor": ctx.actor, "job_id": ctx.job_id},
    );
}
