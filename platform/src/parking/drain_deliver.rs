//! One parked event through the consumer's phases: lease (parked →
//! delivering), breaker, signed call, record; then what the core says the
//! result means for the step (`parking::drain_plan::after_result`).

use super::{handoff_json, send_handoffs, DrainCtx, COMPONENT};
use crate::breaker_store::force_open_call;
use crate::db::{attempts, drains, error_message, event_steps, events, payloads};
use crate::outlined::outlined;
use crate::pipeline::call::{admission, call, no_signing_key};
use crate::{log, metrics, now_ms};
use hookrelay_core::breaker::Admission;
use hookrelay_core::error_code::{ErrorCode, Failure};
use hookrelay_core::metrics::{Metric, MetricName};
use hookrelay_core::parking::drain_plan::{after_result, AfterResult};
use hookrelay_core::parking::{decide, CallDecision, Caller};
use hookrelay_core::redact::destination_label;
use hookrelay_core::state::{lease_stale_before, EventStep};

/// How one event went, for the step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventEnd {
    /// Delivered: go on.
    Delivered,
    /// Refused for good and dead-lettered: go on.
    DeadLettered,
    /// Someone else holds it (a replay, another step): go on.
    Skipped,
    /// The breaker is (again) open; the next step runs at its next probe.
    ProbeAt(i64),
    /// Something on our side failed; the next step retries later.
    Stopped,
}

/// Delivers one parked event of `destination`.
pub async fn one(ctx: &DrainCtx<'_>, row: &events::ParkedRow, destination: &str) -> EventEnd {
    let now = now_ms();
    let stale = lease_stale_before(now, ctx.cfg.timeout_ms);
    match events::claim_parked(ctx.db, &row.event_id, now, stale).await {
        Ok(true) => {}
        Ok(false) => return EventEnd::Skipped,
        Err(e) => {
            log::error(
                COMPONENT,
                "drain_claim_failed",
                log::fields! {"id": row.event_id, "err": error_message(&e)},
            );
            return EventEnd::Stopped;
        }
    }
    let admitted = outlined(admission(ctx.db, COMPONENT, destination, ctx.cfg)).await;
    let label = destination_label(destination);
    let action = ctx.cfg.breaker_open_action;
    if let CallDecision::Refuse(_) =
        decide(admitted, true, action, Caller::DrainStep, &label, now_ms())
    {
        repark(ctx, row, None).await;
        return match admitted {
            Admission::Reject { retry_at_ms, .. } => EventEnd::ProbeAt(retry_at_ms),
            _ => EventEnd::Stopped,
        };
    }
    let result = send(ctx, row, destination).await;
    settle(ctx, row, destination, result).await
}

/// The signed call, with the body loaded if it was claim-checked.
async fn send(
    ctx: &DrainCtx<'_>,
    row: &events::ParkedRow,
    destination: &str,
) -> Result<(), Failure> {
    let key = ctx.cfg.signing_key.as_ref().ok_or_else(no_signing_key)?;
    let body = match (&row.body_ref, &row.body) {
        (Some(r), _) => payloads::load(ctx.db, r).await.ok().flatten(),
        (None, b) => b.clone(),
    }
    .ok_or_else(|| {
        Failure::new(
            ErrorCode::D1Unavailable,
            "the parked event's body could not be loaded from D1",
        )
    })?;
    let event = row.to_queued_event();
    outlined(call(
        ctx.db,
        &event,
        &body,
        destination,
        key,
        ctx.cfg,
        COMPONENT,
    ))
    .await
}

/// Writes the result and answers what the step does next.
async fn settle(
    ctx: &DrainCtx<'_>,
    row: &events::ParkedRow,
    destination: &str,
    result: Result<(), Failure>,
) -> EventEnd {
    let record = events::DeliveryRecord {
        event_id: &row.event_id,
        failure: result.as_ref().err(),
    };
    match after_result(&result) {
        AfterResult::Continue => {
            write(ctx, &[record]).await;
            metrics::count(
                Metric::new(MetricName::Delivered, COMPONENT).source(&row.source),
                1,
            );
            metrics::count(
                Metric::new(MetricName::Drained, COMPONENT).source(&row.source),
                1,
            );
            EventEnd::Delivered
        }
        AfterResult::DeadLetter(f) => {
            record_attempt(ctx, row, &f).await;
            // The event is marked failed only once its dead letter is sent,
            // so a failed send never loses it: it stays parked for the next step.
            if dead_letter(ctx, row, f.clone()).await {
                write(ctx, &[record]).await;
                EventEnd::DeadLettered
            } else {
                repark(ctx, row, Some(&f)).await;
                EventEnd::Stopped
            }
        }
        AfterResult::Reopen(f) => {
            record_attempt(ctx, row, &f).await;
            repark(ctx, row, Some(&f)).await;
            EventEnd::ProbeAt(reopen(ctx, destination, &f).await)
        }
        AfterResult::Stop(f) => {
            log::warn(
                COMPONENT,
                "drain_stopped",
                log::fields! {"id": row.event_id, "code": f.code, "err": f.message},
            );
            repark(ctx, row, None).await;
            EventEnd::Stopped
        }
    }
}

/// Forces the breaker open with `f` and records it as the drain's cause;
/// answers when the next probe is due.
async fn reopen(ctx: &DrainCtx<'_>, destination: &str, f: &Failure) -> i64 {
    let cfg = &ctx.cfg.breaker;
    let probe = force_open_call(
        ctx.db,
        COMPONENT,
        destination,
        f.code,
        f.retry_after_s,
        now_ms(),
        cfg,
    )
    .await;
    if let Err(e) = drains::set_cause(ctx.db, destination, f.code).await {
        log::warn(
            COMPONENT,
            "drain_cause_unwritten",
            log::fields! {"err": error_message(&e)},
        );
    }
    probe.unwrap_or_else(|_| now_ms() + cfg.cooldown_ms)
}

/// The drained delivery's result and its step in the event's story, in one
/// batch.
async fn write(ctx: &DrainCtx<'_>, records: &[events::DeliveryRecord<'_>]) {
    let now = now_ms();
    let written = async {
        let mut stmts = events::delivery_statements(ctx.db, records, now)?;
        for r in records {
            let (step, code, detail) = match r.failure {
                None => (
                    EventStep::Drained,
                    None,
                    "delivered by the drain after its destination recovered".to_string(),
                ),
                Some(f) => (
                    EventStep::DeliveryFailed,
                    Some(f.code),
                    f.message.chars().take(200).collect(),
                ),
            };
            stmts.push(event_steps::insert(
                ctx.db,
                &event_steps::StepRecord {
                    event_id: r.event_id,
                    step,
                    component: COMPONENT,
                    code,
                    detail: &detail,
                    at_ms: now,
                },
            )?);
        }
        crate::db::batch(ctx.db, stmts).await.map(|_| ())
    };
    if let Err(e) = written.await {
        log::error(
            COMPONENT,
            "delivery_record_failed",
            log::fields! {"count": records.len(), "err": error_message(&e)},
        );
    }
}

async fn repark(ctx: &DrainCtx<'_>, row: &events::ParkedRow, failure: Option<&Failure>) {
    if let Err(e) = events::repark(ctx.db, &row.event_id, failure).await {
        // The lease expires on its own and the next step takes it over.
        log::error(
            COMPONENT,
            "repark_failed",
            log::fields! {"id": row.event_id, "err": error_message(&e)},
        );
    }
}

/// The failed call in the attempt history the DLQ builds envelopes from.
async fn record_attempt(ctx: &DrainCtx<'_>, row: &events::ParkedRow, failure: &Failure) {
    let message_id = row.queue_message_id.as_deref().unwrap_or(&row.event_id);
    let attempt = attempts::FailedAttempt {
        event_id: Some(&row.event_id),
        queue_message_id: message_id,
        attempt: (row.delivery_attempts.max(0) + 1) as u32,
        failure,
    };
    if let Err(e) = attempts::record(ctx.db, &[attempt], now_ms()).await {
        log::error(
            COMPONENT,
            "attempt_record_failed",
            log::fields! {"count": 1, "err": error_message(&e)},
        );
    }
}

/// Hands a refused event to `webhooks-dlq` with its reason (a poison
/// hand-off whose `original` is the event rebuilt from its row); whether
/// it was sent.
async fn dead_letter(ctx: &DrainCtx<'_>, row: &events::ParkedRow, failure: Failure) -> bool {
    metrics::count(
        Metric::new(MetricName::DeadLetterHandoff, COMPONENT)
            .source(&row.source)
            .code(failure.code),
        1,
    );
    let json = handoff_json(
        row,
        failure,
        (row.delivery_attempts.max(0) + 1) as u32,
        now_ms(),
    );
    match send_handoffs(ctx.env, &[json]).await {
        Ok(()) => true,
        Err(e) => {
            log::error(
                COMPONENT,
                "dlq_handoff_failed",
                log::fields! {"id": row.event_id, "err": error_message(&e)},
            );
            false
        }
    }
}
