//! The periodic check's part for deliveries (DESIGN §3, "always
//! accounted"): run by the `*/1` cron and, locally, by the same check that
//! resumes drains (every 30 s per isolate on traffic).
//!
//! - A lease that ran out with nothing recorded (the holder died, or every
//!   write of its outcome and its carrying message failed) is counted
//!   (`lease_expired`) and settled as a failed `TIMEOUT` attempt: its
//!   story says the destination may already have it, and it is retried
//!   with the same `X-Operation-Id` (the event id), or handed to the DLQ
//!   when that was its sixth attempt.
//! - A pending delivery whose message is overdue (lost: a local restart, a
//!   send that failed after the row was marked) is sent again, counted.

use crate::db::{attempts, deliveries, error_message, event_steps};
use crate::parking::{handoff_json, send_handoffs};
use crate::{log, metrics, queue_send};
use hookrelay_core::deliver::deliveries::message::DeliveryMessage;
use hookrelay_core::deliver::overdue::overdue_before;
use hookrelay_core::deliver::DeliveryConfig;
use hookrelay_core::metrics::{Component, Metric, MetricName};
use hookrelay_core::retry::delivery_attempts::{after_call, AfterCall};
use hookrelay_core::retry::policy::RetrySchedule;
use hookrelay_core::state::error_code::{ErrorCode, Failure};
use hookrelay_core::state::EventStep;
use worker::{D1Database, Env};

/// Rows settled or re-sent per check: one bounded read each.
const PER_CHECK: u32 = 100;

const COMPONENT: Component = Component::Deliveries;

/// Settles run-out leases, then re-sends overdue messages. Failures are
/// logged; the next check tries again.
pub async fn check(env: &Env, (cfg, retry): (&DeliveryConfig, &RetrySchedule), now_ms: i64) {
    let Ok(db) = env.d1("DB") else { return };
    if let Err(e) = expired(env, &db, retry, cfg, now_ms).await {
        log::error(
            COMPONENT,
            "lease_expiry_failed",
            log::fields! {"err": error_message(&e)},
        );
    }
    if let Err(e) = resend(env, &db, cfg, now_ms).await {
        log::error(
            COMPONENT,
            "message_resend_failed",
            log::fields! {"err": error_message(&e)},
        );
    }
}

async fn expired(
    env: &Env,
    db: &D1Database,
    retry: &RetrySchedule,
    cfg: &DeliveryConfig,
    now: i64,
) -> worker::Result<()> {
    // A pull destination's lease is its consumer's, settled by its ack.
    let pulls = cfg.pull_names();
    let rows = deliveries::expired_leases(db, (now, &pulls), PER_CHECK).await?;
    for row in rows {
        settle(env, db, (retry, cfg), &row, now).await?;
    }
    Ok(())
}

/// Settles one run-out lease: the `TIMEOUT` attempt written (unless its
/// holder recorded meanwhile), counted, then retried or handed off.
async fn settle(
    env: &Env,
    db: &D1Database,
    (retry, cfg): (&RetrySchedule, &DeliveryConfig),
    row: &deliveries::DeliveryRow,
    now: i64,
) -> worker::Result<()> {
    let Some(claimed_at) = row.claimed_at else {
        return Ok(());
    };
    let e = &row.event;
    let key = (e.event_id.as_str(), row.destination.as_str());
    let failure = Failure::new(
        ErrorCode::Timeout,
        format!(
            "lease_expired: the call to {} started and no outcome was recorded before its lease ran out; the destination may already have it (the retry carries the same X-Operation-Id)",
            row.destination
        ),
    );
    let before = e.delivery_attempts.max(0) as u32;
    let after = after_call(Err(&failure), before, retry, cfg.breaker_open_action);
    let due_at = after.due_at(now).unwrap_or(now);
    let failed = (&failure, EventStep::LeaseExpired);
    let stmts = settle_statements(db, (row, claimed_at), failed, (before, due_at), now)?;
    let results = crate::db::batch(db, stmts).await?;
    // The holder recorded meanwhile: nothing to settle.
    if results.first().map_or(0, |r| r.changes()) == 0 {
        return Ok(());
    }
    metrics::count(
        Metric::new(MetricName::LeaseExpired, COMPONENT).source(&e.source),
        1,
    );
    log::warn(
        COMPONENT,
        "lease_expired",
        log::fields! {"id": e.event_id, "destination": row.destination, "attempt": before + 1},
    );
    match after {
        AfterCall::Retry { delay_s, .. } => {
            let m = DeliveryMessage::new(
                &e.event_id,
                &e.idempotency_key,
                &e.source,
                key.1,
                e.received_at,
            );
            let q = env.queue("DELIVERIES")?;
            if let Err(err) =
                queue_send::send_json_after(&q, &serde_json::to_string(&m)?, delay_s).await
            {
                // Its due time passes and the overdue check sends it.
                log::warn(
                    COMPONENT,
                    "lease_expired_unsent",
                    log::fields! {"id": e.event_id, "err": error_message(&err)},
                );
            }
        }
        AfterCall::HandOff { failure } => {
            hand_off((env, db), (row, None), failure, before + 1, now).await?
        }
        AfterCall::Delivered => {}
    }
    Ok(())
}

/// Hands a delivery (revived by a replay at `revived_at`, if it was) whose
/// failed attempt `attempt` ended its budget to `webhooks-dlq`, then marks
/// it handed off (a failed send leaves it for the next settlement).
pub(crate) async fn hand_off(
    (env, db): (&Env, &D1Database),
    (row, revived_at): (&deliveries::DeliveryRow, Option<i64>),
    failure: Failure,
    attempt: u32,
    now: i64,
) -> worker::Result<()> {
    let key = (row.event.event_id.as_str(), row.destination.as_str());
    let json = handoff_json(&row.event, (key.1, revived_at), failure, attempt, now);
    if send_handoffs(env, &[json]).await.is_ok() {
        deliveries::mark_handed_off(db, &[key], now).await?;
    }
    Ok(())
}

/// A failed attempt recorded without a call under the lease taken at
/// `claimed_at` (a run-out lease's `TIMEOUT`, a pull consumer's failed
/// ack): its row, its attempt, its `step` and its event's summary.
pub(crate) fn settle_statements(
    db: &D1Database,
    (row, claimed_at): (&deliveries::DeliveryRow, i64),
    (failure, step): (&Failure, EventStep),
    (before, due_at): (u32, i64),
    now: i64,
) -> worker::Result<Vec<worker::D1PreparedStatement>> {
    let e = &row.event;
    let key = (e.event_id.as_str(), row.destination.as_str());
    let message_id = e.queue_message_id.as_deref().unwrap_or(&e.event_id);
    let detail: String = format!("{}: {}", row.destination, failure.message)
        .chars()
        .take(200)
        .collect();
    Ok(vec![
        deliveries::lease_expired_statement(db, key, claimed_at, failure, due_at, now)?,
        attempts::insert_statement(
            db,
            &attempts::FailedAttempt {
                event_id: Some(key.0),
                queue_message_id: message_id,
                attempt: before + 1,
                failure,
                destination: Some(key.1),
            },
            now,
        )?,
        event_steps::insert(
            db,
            &event_steps::StepRecord {
                event_id: key.0,
                step,
                component: COMPONENT,
                code: Some(failure.code),
                detail: &detail,
                at_ms: now,
            },
        )?,
        deliveries::summary_statement(db, key.0, 1, None, Some(failure.code))?,
    ])
}

async fn resend(env: &Env, db: &D1Database, cfg: &DeliveryConfig, now: i64) -> worker::Result<()> {
    let before = overdue_before(now, cfg.message_overdue_ms);
    // A pull destination's delivery has no message: never overdue.
    let pulls = cfg.pull_names();
    let rows = deliveries::overdue(db, (before, &pulls), PER_CHECK).await?;
    if rows.is_empty() {
        return Ok(());
    }
    let keys: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r.event.event_id.as_str(), r.destination.as_str()))
        .collect();
    let marked = deliveries::mark_resent(db, &keys, now, (before, &pulls)).await?;
    let jsons: Vec<String> = rows
        .iter()
        .filter(|r| {
            marked
                .iter()
                .any(|(e, d)| *e == r.event.event_id && *d == r.destination)
        })
        .filter_map(|r| {
            let e = &r.event;
            let m = DeliveryMessage::new(
                &e.event_id,
                &e.idempotency_key,
                &e.source,
                &r.destination,
                e.received_at,
            );
            serde_json::to_string(&m).ok()
        })
        .collect();
    if jsons.is_empty() {
        return Ok(());
    }
    let q = env.queue("DELIVERIES")?;
    if let Err(e) = queue_send::send_json_batch(&q, &jsons).await {
        let back: Vec<(&str, &str)> = marked
            .iter()
            .map(|(e, d)| (e.as_str(), d.as_str()))
            .collect();
        deliveries::unsent(db, &back).await?;
        return Err(e);
    }
    for r in rows.iter().filter(|r| {
        marked
            .iter()
            .any(|(e, d)| *e == r.event.event_id && *d == r.destination)
    }) {
        metrics::count(
            Metric::new(MetricName::MessageResent, COMPONENT).source(&r.event.source),
            1,
        );
    }
    log::warn(
        COMPONENT,
        "messages_resent",
        log::fields! {"count": jsons.len()},
    );
    Ok(())
}
