//! One parked delivery through the consumer's phases: lease (parked →
//! delivering), breaker, signed call, record; then what the core says the
//! result means for the step (`parking::drain_plan::after_result`).

use super::{handoff_json, send_handoffs, DrainCtx, COMPONENT};
use crate::breaker_store::force_open_call;
use crate::db::deliveries::{self, DeliveryRow};
use crate::db::{attempts, drains, error_message, payloads};
use crate::outlined::outlined;
use crate::pipeline::call::{admission, call};
use crate::{log, metrics, now_ms};
use hookrelay_core::deliver::breaker::Admission;
use hookrelay_core::deliver::lease::{lease_until, Holder};
use hookrelay_core::metrics::{Metric, MetricName};
use hookrelay_core::parking::drain_plan::{after_result, AfterResult};
use hookrelay_core::parking::{decide, CallDecision, Caller};
use hookrelay_core::state::error_code::{ErrorCode, Failure};

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

/// Delivers one parked delivery of `destination`.
pub async fn one(ctx: &DrainCtx<'_>, row: &DeliveryRow, destination: &str) -> EventEnd {
    let now = now_ms();
    let holder = Holder::batch(Caller::DrainStep, ctx.cfg.timeout_of(destination), None);
    let lease = deliveries::Lease::new(now, lease_until(now, holder));
    let key = (row.event.event_id.as_str(), destination);
    match deliveries::claim_parked(ctx.db, key, lease).await {
        Ok(true) => {}
        Ok(false) => return EventEnd::Skipped,
        Err(e) => {
            log::error(
                COMPONENT,
                "drain_claim_failed",
                log::fields! {"id": row.event.event_id, "err": error_message(&e)},
            );
            return EventEnd::Stopped;
        }
    }
    let admitted = outlined(admission(ctx.db, COMPONENT, destination, ctx.cfg)).await;
    let action = ctx.cfg.breaker_open_action;
    if let CallDecision::Refuse(_) = decide(
        admitted,
        true,
        action,
        Caller::DrainStep,
        destination,
        now_ms(),
    ) {
        repark(ctx, (row, lease.claimed_at), destination, None).await;
        return match admitted {
            Admission::Reject { retry_at_ms, .. } => EventEnd::ProbeAt(retry_at_ms),
            _ => EventEnd::Stopped,
        };
    }
    let result = send(ctx, row, destination).await;
    settle(ctx, (row, lease.claimed_at), destination, result).await
}

/// The call, with the body loaded if it was claim-checked.
async fn send(ctx: &DrainCtx<'_>, row: &DeliveryRow, destination: &str) -> Result<(), Failure> {
    if ctx.cfg.destination(destination).is_none() {
        return Err(crate::pipeline::not_configured(destination));
    }
    let body = match (&row.event.body_ref, &row.event.body) {
        (Some(r), _) => payloads::load(ctx.db, r).await.ok().flatten(),
        (None, b) => b.clone(),
    }
    .ok_or_else(|| {
        Failure::new(
            ErrorCode::D1Unavailable,
            "the parked event's body could not be loaded from D1",
        )
    })?;
    let event = row.event.to_queued_event();
    outlined(call(
        (ctx.db, ctx.env),
        &event,
        &body,
        destination,
        ctx.cfg,
        COMPONENT,
    ))
    .await
}

/// Writes the result and answers what the step does next.
async fn settle(
    ctx: &DrainCtx<'_>,
    (row, claimed_at): (&DeliveryRow, i64),
    destination: &str,
    result: Result<(), Failure>,
) -> EventEnd {
    let leased = (row, claimed_at);
    let source = row.event.source.as_str();
    let credentialed = ctx
        .cfg
        .destination(destination)
        .is_some_and(|d| d.auth.is_some());
    match after_result(&result, credentialed) {
        AfterResult::Continue => {
            write(ctx, leased, destination, None).await;
            metrics::count(
                Metric::new(MetricName::Delivered, COMPONENT).source(source),
                1,
            );
            metrics::count(
                Metric::new(MetricName::Drained, COMPONENT).source(source),
                1,
            );
            EventEnd::Delivered
        }
        AfterResult::DeadLetter(f) => {
            record_attempt(ctx, row, destination, &f).await;
            // The delivery is marked dead-lettered only once its dead letter
            // is sent, so a failed send never loses it: it stays parked for
            // the next step.
            if dead_letter(ctx, row, destination, f.clone()).await {
                write(ctx, leased, destination, Some(&f)).await;
                EventEnd::DeadLettered
            } else {
                repark(ctx, leased, destination, Some(&f)).await;
                EventEnd::Stopped
            }
        }
        AfterResult::Reopen(f) => {
            record_attempt(ctx, row, destination, &f).await;
            repark(ctx, leased, destination, Some(&f)).await;
            EventEnd::ProbeAt(reopen(ctx, destination, &f).await)
        }
        AfterResult::Stop(f) => {
            log::warn(
                COMPONENT,
                "drain_stopped",
                log::fields! {"id": row.event.event_id, "code": f.code, "err": f.message},
            );
            repark(ctx, leased, destination, None).await;
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

/// The drained delivery's result (delivered, or handed to the DLQ once its
/// hand-off was sent: pending until the triage closes it), through the one
/// recorder (`crate::pipeline::record::record_drained`).
async fn write(
    ctx: &DrainCtx<'_>,
    (row, claimed_at): (&DeliveryRow, i64),
    destination: &str,
    failure: Option<&Failure>,
) {
    let leased = (row.event.event_id.as_str(), destination, claimed_at);
    crate::pipeline::record::record_drained(
        (ctx.db, ctx.env),
        &row.event,
        leased,
        failure,
        COMPONENT,
    )
    .await;
}

async fn repark(
    ctx: &DrainCtx<'_>,
    (row, claimed_at): (&DeliveryRow, i64),
    destination: &str,
    failure: Option<&Failure>,
) {
    let key = (row.event.event_id.as_str(), destination);
    if let Err(e) = deliveries::repark(ctx.db, key, claimed_at, failure, now_ms()).await {
        // The lease expires on its own and the next step takes it over.
        log::error(
            COMPONENT,
            "repark_failed",
            log::fields! {"id": row.event.event_id, "err": error_message(&e)},
        );
    }
}

/// The failed call in the attempt history the DLQ builds envelopes from.
async fn record_attempt(
    ctx: &DrainCtx<'_>,
    row: &DeliveryRow,
    destination: &str,
    failure: &Failure,
) {
    let r = &row.event;
    let message_id = r.queue_message_id.as_deref().unwrap_or(&r.event_id);
    let attempt = attempts::FailedAttempt {
        event_id: Some(&r.event_id),
        queue_message_id: message_id,
        attempt: (r.delivery_attempts.max(0) + 1) as u32,
        failure,
        destination: Some(destination),
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
async fn dead_letter(
    ctx: &DrainCtx<'_>,
    row: &DeliveryRow,
    destination: &str,
    failure: Failure,
) -> bool {
    metrics::count(
        Metric::new(MetricName::DeadLetterHandoff, COMPONENT)
            .source(&row.event.source)
            .code(failure.code),
        1,
    );
    let json = handoff_json(
        &row.event,
        (destination, None),
        failure,
        (row.event.delivery_attempts.max(0) + 1) as u32,
        now_ms(),
    );
    match send_handoffs(ctx.env, &[json]).await {
        Ok(()) => true,
        Err(e) => {
            log::error(
                COMPONENT,
                "dlq_handoff_failed",
                log::fields! {"id": row.event.event_id, "err": error_message(&e)},
            );
            false
        }
    }
}
