//! Replaying one dead-letter entry: the relay runs the consumer's own
//! ingest-and-deliver pipeline on it (`relay_client`), and this worker
//! records what came of it.
//!
//! The replay keeps the original event id, idempotency key and queue
//! message id, so an event that was ingested and delivered since is neither
//! ingested nor delivered again: the pipeline finds its row and its
//! `delivered` status.

use crate::entries::relay_client::Relay;
use hookrelay_core::dead_letter::envelope::Envelope;
use hookrelay_core::metrics::{Component, Metric, MetricName};
use hookrelay_core::replay::call::{ReplayAnswer, ReplayCall};
use hookrelay_core::replay::plan::after_replay;
use hookrelay_core::replay::verdict::outcome_of;
use hookrelay_core::state::error_code::{ErrorCode, Failure};
use hookrelay_core::state::{AuditAction, DownstreamResult, EntryKind, EntryStatus, ReplayOutcome};
use hookrelay_platform::db::dead_letters::{self, EntryRow};
use hookrelay_platform::db::replay_audit::{self, AuditRecord};
use hookrelay_platform::{log, metrics};
use serde::Serialize;
use worker::D1Database;

/// The log and metric label of a replay.
pub const COMPONENT: Component = Component::Replay;

/// Who replays, and why.
pub struct ReplayContext<'a> {
    /// The token subject.
    pub actor: &'a str,
    /// The stated reason.
    pub reason: &'a str,
    /// The replay-all run, if any.
    pub run_id: Option<&'a str>,
    /// The job, if any.
    pub job_id: Option<&'a str>,
    /// Failed replays before `poisoned`.
    pub max_replay_attempts: u32,
    /// The clock.
    pub now_ms: i64,
}

impl ReplayContext<'_> {
    /// The audit record of one decision about `entry_id`.
    pub fn audit<'a>(
        &'a self,
        entry_id: &'a str,
        event_id: Option<&'a str>,
        outcome: ReplayOutcome,
        error: Option<&'a Failure>,
    ) -> AuditRecord<'a> {
        AuditRecord {
            entry_id,
            event_id,
            actor: self.actor,
            reason: self.reason,
            action: AuditAction::Replay,
            outcome,
            error,
            run_id: self.run_id,
            job_id: self.job_id,
            at_ms: self.now_ms,
        }
    }
}

/// What one replay did.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayResult {
    /// The entry.
    pub id: String,
    /// What it came to.
    pub outcome: ReplayOutcome,
    /// The entry's status afterwards.
    pub status: EntryStatus,
    /// Failed replays so far.
    pub replay_attempts: u32,
    /// How the downstream delivery went, if the source forwards.
    pub delivery: DownstreamResult,
    /// Why it failed, if it did.
    pub error: Option<Failure>,
}

/// Why a replay changed nothing.
pub type ReplayError = crate::entries::change_error::EntryChangeError;

/// Asks the relay to replay the entry's original event: a `delivery`
/// entry to its destination alone. Answers the destination asked for too.
async fn attempt(relay: &Relay, entry: &EntryRow) -> (ReplayAnswer, Option<String>) {
    let failed = |failure: Failure| ReplayAnswer {
        downstream: DownstreamResult::NotForwarded,
        failure: Some(failure),
        refused: None,
        refusal_code: None,
    };
    let Ok(envelope) = serde_json::from_str::<Envelope>(&entry.envelope) else {
        let failure = Failure::new(
            ErrorCode::SchemaMismatch,
            "the stored envelope cannot be read",
        );
        return (failed(failure), None);
    };
    let destination = match envelope.identity.kind {
        EntryKind::Delivery => envelope.identity.destination,
        EntryKind::Ingest => None,
    };
    let call = ReplayCall {
        event: envelope.input.original,
        queue_message_id: envelope.identity.queue_message_id,
        entry_code: envelope.failure.code,
        destination,
    };
    (relay.replay(&call).await, call.destination)
}

/// Replays one entry (which the caller checked is pending) and records the
/// result and the audit record in one D1 round trip.
pub async fn replay_entry(
    db: &D1Database,
    relay: &Relay,
    entry: &EntryRow,
    ctx: &ReplayContext<'_>,
) -> Result<ReplayResult, ReplayError> {
    let (answer, destination) = attempt(relay, entry).await;
    if let Some(why) = answer.refused {
        return Err(match answer.refusal_code {
            Some(code) => ReplayError::RefusedAs(code, why),
            None => ReplayError::Refused(why),
        });
    }
    let s = &entry.summary;
    let ok = answer.failure.is_none();
    let before = u32::try_from(s.replay_attempts).unwrap_or(0);
    let (status, replay_attempts) = after_replay(before, ok, ctx.max_replay_attempts);
    let outcome = outcome_of(ok, status);
    let error = answer.failure;
    let audit = ctx.audit(&s.id, s.event_id.as_deref(), outcome, error.as_ref());
    hookrelay_platform::db::batch(
        db,
        vec![
            dead_letters::set_replay_result(db, &s.id, status, replay_attempts, ctx.now_ms)?,
            replay_audit::insert(db, &audit)?,
        ],
    )
    .await?;
    let result = ReplayResult {
        id: s.id.clone(),
        outcome,
        status,
        replay_attempts,
        delivery: answer.downstream,
        error,
    };
    report(entry, &result, destination.as_deref(), ctx);
    Ok(result)
}

/// The replay's counters and its log line (with the destination the call
/// asked for: none for an `ingest` entry).
fn report(entry: &EntryRow, r: &ReplayResult, destination: Option<&str>, ctx: &ReplayContext<'_>) {
    let source = entry.summary.source.as_deref().unwrap_or("");
    let metric = match &r.error {
        Some(f) => Metric::new(MetricName::ReplayFailed, COMPONENT)
            .source(source)
            .code(f.code),
        None => Metric::new(MetricName::ReplaySucceeded, COMPONENT).source(source),
    };
    metrics::count(metric, 1);
    if r.status == EntryStatus::Poisoned {
        metrics::count(
            Metric::new(MetricName::DropPoison, COMPONENT).source(source),
            1,
        );
    }
    let level = if r.error.is_some() {
        log::Level::Warn
    } else {
        log::Level::Info
    };
    log::emit(
        level,
        None,
        COMPONENT,
        "replay",
        log::fields! {"id": r.id, "event_id": entry.summary.event_id, "destination": destination, "outcome": r.outcome, "status": r.status, "replay_attempts": r.replay_attempts, "actor": ctx.actor, "code": r.error.as_ref().map(|f| f.code), "run_id": ctx.run_id},
    );
}
