//! Replaying one dead-letter entry through the same ingest-and-deliver
//! pipeline the consumer runs (`hookrelay_platform::pipeline`).
//!
//! The replay keeps the original event id, idempotency key and queue
//! message id, so an event that was ingested and delivered since is neither
//! ingested nor delivered again: the pipeline finds its row and its
//! `delivered` status.

use crate::admin_store::EntryRow;
use hookrelay_core::config::DeliveryConfig;
use hookrelay_core::disposition::Outcome;
use hookrelay_core::envelope::Envelope;
use hookrelay_core::error_code::{ErrorCode, Failure};
use hookrelay_core::metrics::Metric;
use hookrelay_core::queued_event::decode_value;
use hookrelay_core::replay_plan::{after_replay, EntryStatus};
use hookrelay_platform::d1::{int, opt_text, text};
use hookrelay_platform::pipeline::{self, Delivery, Item};
use hookrelay_platform::{log, metrics};
use serde::Serialize;
use serde_json::json;
use worker::D1Database;

/// Who replays, and why.
pub struct ReplayContext<'a> {
    /// The token subject.
    pub actor: &'a str,
    /// The stated reason.
    pub reason: &'a str,
    /// The replay-all run, if any.
    pub run_id: Option<&'a str>,
    /// Failed replays before `poisoned`.
    pub max_replay_attempts: u32,
    /// The clock.
    pub now_ms: i64,
}

/// What one replay did.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayResult {
    /// The entry.
    pub id: String,
    /// `succeeded`, `failed` or `poisoned`.
    pub outcome: &'static str,
    /// The entry's status afterwards.
    pub status: &'static str,
    /// Failed replays so far.
    pub replay_attempts: u32,
    /// How the downstream delivery went, if the source forwards.
    pub delivery: &'static str,
    /// Why it failed, if it did.
    pub error: Option<Failure>,
}

impl ReplayResult {
    /// Whether the replay succeeded.
    pub fn succeeded(&self) -> bool {
        self.outcome == "succeeded"
    }
}

fn delivery_name(d: &Delivery) -> &'static str {
    match d {
        Delivery::NotForwarded => "not_forwarded",
        Delivery::AlreadyDelivered => "already_delivered",
        Delivery::InFlightElsewhere => "in_flight_elsewhere",
        Delivery::Delivered => "delivered",
        Delivery::Failed => "failed",
    }
}

/// Runs the pipeline for the entry's original event.
async fn attempt(
    db: &D1Database,
    delivery: &DeliveryConfig,
    envelope: &Envelope,
    now_ms: i64,
) -> (Result<(), Failure>, &'static str) {
    let event = match decode_value(&envelope.input.original) {
        Ok(e) => e,
        Err(f) => return (Err(f), "not_forwarded"),
    };
    let item = Item {
        event: &event,
        queue_message_id: &envelope.identity.queue_message_id,
    };
    let Some(processed) = pipeline::run(db, &[item], delivery, "admin", now_ms)
        .await
        .pop()
    else {
        return (
            Err(Failure::new(
                ErrorCode::Unknown,
                "the pipeline returned no result",
            )),
            "not_forwarded",
        );
    };
    let delivery = delivery_name(&processed.delivery);
    match (processed.outcome, processed.delivery) {
        (Outcome::Failed(f), _) => (Err(f), delivery),
        (_, Delivery::InFlightElsewhere) => (
            Err(Failure::new(
                ErrorCode::Unknown,
                "another worker is delivering this event right now; replay again later",
            )),
            delivery,
        ),
        _ => (Ok(()), delivery),
    }
}

/// Replays one entry (which the caller checked is pending) and records the
/// result, the audit record and the counters in one D1 round trip.
pub async fn replay_entry(
    db: &D1Database,
    delivery: &DeliveryConfig,
    entry: &EntryRow,
    ctx: &ReplayContext<'_>,
) -> worker::Result<ReplayResult> {
    let (result, delivery_state) = match serde_json::from_str::<Envelope>(&entry.envelope) {
        Ok(envelope) => attempt(db, delivery, &envelope, ctx.now_ms).await,
        Err(_) => (
            Err(Failure::new(
                ErrorCode::SchemaMismatch,
                "the stored envelope cannot be read",
            )),
            "not_forwarded",
        ),
    };
    let before = u32::try_from(entry.summary.replay_attempts).unwrap_or(0);
    let (status, replay_attempts) = after_replay(before, result.is_ok(), ctx.max_replay_attempts);
    let outcome = match (&result, status) {
        (Ok(()), _) => "succeeded",
        (Err(_), EntryStatus::Poisoned) => "poisoned",
        (Err(_), _) => "failed",
    };
    let error = result.err();
    let stmts = vec![
        db.prepare("UPDATE dead_letters SET status = ?2, replay_attempts = ?3, replayed_at = CASE WHEN ?2 = 'replayed' THEN ?4 ELSE replayed_at END WHERE id = ?1")
            .bind(&[text(&entry.summary.id), text(status.as_str()), int(i64::from(replay_attempts)), int(ctx.now_ms)])?,
        audit_statement(db, &entry.summary.id, entry.summary.event_id.as_deref(), ctx, outcome, error.as_ref())?,
    ];
    db.batch(stmts).await?;
    let source = entry.summary.source.as_deref().unwrap_or("");
    let replay_metric = Metric::new(
        if error.is_none() {
            "replay_succeeded"
        } else {
            "replay_failed"
        },
        "admin",
    )
    .source(source);
    metrics::count(
        match &error {
            Some(f) => replay_metric.code(f.code),
            None => replay_metric,
        },
        1,
    );
    if status == EntryStatus::Poisoned {
        metrics::count(Metric::new("drop_poison", "admin").source(source), 1);
    }
    log::emit(
        if error.is_some() {
            log::Level::Warn
        } else {
            log::Level::Info
        },
        None,
        "admin",
        "replay",
        json!({"id": entry.summary.id, "event_id": entry.summary.event_id, "outcome": outcome, "status": status.as_str(), "replay_attempts": replay_attempts, "actor": ctx.actor, "code": error.as_ref().map(|f| f.code), "run_id": ctx.run_id}),
    );
    Ok(ReplayResult {
        id: entry.summary.id.clone(),
        outcome,
        status: status.as_str(),
        replay_attempts,
        delivery: delivery_state,
        error,
    })
}

/// The audit record of one replay decision.
pub fn audit_statement(
    db: &D1Database,
    entry_id: &str,
    event_id: Option<&str>,
    ctx: &ReplayContext<'_>,
    outcome: &str,
    error: Option<&Failure>,
) -> worker::Result<worker::D1PreparedStatement> {
    db.prepare("INSERT INTO replay_audit (entry_id, event_id, actor, reason, outcome, error_code, error_message, run_id, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)")
        .bind(&[
            text(entry_id),
            opt_text(event_id),
            text(ctx.actor),
            text(ctx.reason),
            text(outcome),
            opt_text(error.map(|f| f.code.as_str())),
            opt_text(error.map(|f| f.message.as_str())),
            opt_text(ctx.run_id),
            int(ctx.now_ms),
        ])
}
