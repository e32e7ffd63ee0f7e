//! Step 3: each new delivery's first attempt, in this invocation (DESIGN
//! §3, "One hop for the common case"): the deliveries the ingest marked to
//! send go through the same pipeline as the `deliveries` consumer's (claim,
//! the calls behind each breaker and rate, the one recorder), with the
//! batch's call budget (`FIRST_ATTEMPT_BUDGET`) and the invocation's call
//! scheduler. The `deliveries` queue then carries only what the first
//! attempt did not settle: a transient failure with its first retry delay
//! (or the destination's `Retry-After`), and a delivery whose call did not
//! start within the budget, at once. A success costs no `deliveries`
//! message; poison (or a sixth failure) is handed to `webhooks-dlq`.
//!
//! The `webhooks` messages are acked only once every message this step
//! owes is on its queue; if a send fails, the deliveries are marked unsent
//! and the events' messages retried (their redelivery finds them due).

use super::enqueue::{delivery_message, enqueue, read_pending, DELIVERIES_BINDING};
use super::COMPONENT;
use hookrelay_core::deliver::DeliveryConfig;
use hookrelay_core::metrics::{Metric, MetricName};
use hookrelay_core::parking::Caller;
use hookrelay_core::retry::delivery_attempts::AfterCall;
use hookrelay_core::retry::poison_handoff::{delivery_handoff_id, PoisonHandoff};
use hookrelay_core::retry::policy::RetrySchedule;
use hookrelay_core::state::error_code::{ErrorCode, Failure};
use hookrelay_core::state::DownstreamResult;
use hookrelay_platform::db::{deliveries, error_message};
use hookrelay_platform::pipeline::{self, Carrier, Item, Pending, Processed};
use hookrelay_platform::{log, metrics, queue_send};
use worker::{D1Database, Env};

/// What one delivery's first attempt leaves to do.
enum Owed {
    /// Nothing: delivered, parked, or someone else's.
    Nothing,
    /// A `deliveries` message after `delay_s` (0: at once).
    Message(u32),
    /// A hand-off to `webhooks-dlq`.
    HandOff(Failure, u32),
}

/// Makes the first attempt of every delivery in `pending`, then sends what
/// they owe; an error retries the events' messages.
pub async fn first_attempts(
    (env, db): (&Env, &D1Database),
    (cfg, retry): (&DeliveryConfig, &RetrySchedule),
    items: &[Item<'_>],
    pending: Result<Vec<Pending>, String>,
    now: i64,
) -> Result<(), Failure> {
    let pending = read_pending(pending)?;
    if pending.is_empty() {
        return Ok(());
    }
    if cfg.first_attempt_budget_ms == 0 {
        return enqueue(env, items, Ok(pending)).await;
    }
    let carriers: Vec<Carrier<'_>> = pending
        .iter()
        .map(|(event_id, _)| {
            let id = items
                .iter()
                .find(|i| i.event.event_id == *event_id)
                .map_or("", |i| i.queue_message_id);
            (id, 1)
        })
        .collect();
    let control = env.queue("CONTROL").ok();
    let processed = pipeline::deliver(
        (db, env),
        &pending,
        &carriers,
        (cfg, retry, Some(cfg.first_attempt_budget_ms)),
        (COMPONENT, Caller::Consumer),
        now,
        control.as_ref(),
    )
    .await;
    let owed: Vec<Owed> = processed.iter().map(owed).collect();
    log_failures(&pending, &processed, &owed);
    send_owed((env, db), items, &pending, owed, now).await
}

/// What a first attempt's result leaves to do.
fn owed(p: &Processed) -> Owed {
    match &p.after {
        Some(AfterCall::Delivered) => return Owed::Nothing,
        Some(AfterCall::Retry { delay_s, .. }) => return Owed::Message(*delay_s),
        Some(AfterCall::HandOff { failure }) => {
            return Owed::HandOff(failure.clone(), p.attempt.unwrap_or(1))
        }
        None => {}
    }
    if p.handed_on {
        return Owed::Message(0);
    }
    match (p.downstream, &p.outcome) {
        // The claim could not be made (D1): the `deliveries` consumer tries.
        (
            DownstreamResult::NotForwarded,
            hookrelay_core::retry::disposition::Outcome::Failed(f),
        ) if f.class() != hookrelay_core::state::error_code::FailureClass::Poison => {
            Owed::Message(0)
        }
        (
            DownstreamResult::NotForwarded,
            hookrelay_core::retry::disposition::Outcome::Failed(f),
        ) => Owed::HandOff(f.clone(), 1),
        // Delivered, parked, leased elsewhere, or called with its outcome
        // carried or left to the periodic check.
        _ => Owed::Nothing,
    }
}

/// Sends the owed messages and hand-offs; marks the hand-offs sent.
async fn send_owed(
    (env, db): (&Env, &D1Database),
    items: &[Item<'_>],
    pending: &[Pending],
    owed: Vec<Owed>,
    now: i64,
) -> Result<(), Failure> {
    let mut later: Vec<(String, u32)> = Vec::new();
    let mut later_keys: Vec<(&str, &str)> = Vec::new();
    let mut handoffs: Vec<String> = Vec::new();
    let mut handed: Vec<(&str, &str)> = Vec::new();
    for ((event_id, destination), o) in pending.iter().zip(owed) {
        let Some(m) = delivery_message(items, event_id, destination) else {
            continue;
        };
        let key = (event_id.as_str(), destination.as_str());
        match o {
            Owed::Nothing => {}
            Owed::Message(delay_s) => {
                if let Ok(json) = serde_json::to_string(&m) {
                    later.push((json, delay_s));
                    later_keys.push(key);
                }
            }
            Owed::HandOff(failure, attempt) => {
                metrics::count(
                    Metric::new(MetricName::DeadLetterHandoff, COMPONENT)
                        .source(&m.source)
                        .code(failure.code),
                    1,
                );
                let original = serde_json::to_value(&m).unwrap_or_default();
                // One entry per delivery: the event's id and the destination.
                let h = PoisonHandoff::new(
                    failure,
                    attempt,
                    delivery_handoff_id(&m.event_id, &m.destination, None),
                    m.received_at_ms,
                    now,
                    original,
                );
                if let Ok(json) = serde_json::to_string(&h) {
                    handoffs.push(json);
                    handed.push(key);
                }
            }
        }
    }
    hand_off((env, db), &handoffs, &handed, now).await?;
    send_later((env, db), &later, &later_keys).await
}

/// Sends the hand-offs, then marks them handed off; a failed send retries
/// the events' messages (their rows are pending, due now).
async fn hand_off(
    (env, db): (&Env, &D1Database),
    handoffs: &[String],
    handed: &[(&str, &str)],
    now: i64,
) -> Result<(), Failure> {
    if handoffs.is_empty() {
        return Ok(());
    }
    let sent = match env.queue("WEBHOOKS_DLQ") {
        Ok(q) => queue_send::send_json_batch(&q, handoffs).await,
        Err(e) => Err(e),
    };
    match sent {
        Ok(()) => {
            if let Err(e) = deliveries::mark_handed_off(db, handed, now).await {
                log::error(
                    COMPONENT,
                    "dead_lettered_unmarked",
                    log::fields! {"count": handed.len(), "err": error_message(&e)},
                );
            }
        }
        Err(e) => {
            log::error(
                COMPONENT,
                "dlq_handoff_failed",
                log::fields! {"count": handed.len(), "err": error_message(&e)},
            );
            // Unsent: the events' retry takes them up again.
            if let Err(e) = deliveries::unsent(db, handed).await {
                log::warn(
                    COMPONENT,
                    "deliveries_unsent_unmarked",
                    log::fields! {"count": handed.len(), "err": error_message(&e)},
                );
            }
            return Err(Failure::new(
                ErrorCode::Unknown,
                format!(
                    "webhooks-dlq did not take the hand-offs: {}; retrying",
                    error_message(&e)
                ),
            ));
        }
    }
    Ok(())
}

/// Sends the owed `deliveries` messages, each after its delay; a failed
/// send marks them unsent and retries the events' messages.
async fn send_later(
    (env, db): (&Env, &D1Database),
    later: &[(String, u32)],
    later_keys: &[(&str, &str)],
) -> Result<(), Failure> {
    if later.is_empty() {
        return Ok(());
    }
    let sent = match env.queue(DELIVERIES_BINDING) {
        Ok(q) => queue_send::send_json_batch_after(&q, later).await,
        Err(e) => Err(e),
    };
    if let Err(e) = sent {
        log::error(
            COMPONENT,
            "deliveries_send_failed",
            log::fields! {"count": later.len(), "err": error_message(&e)},
        );
        if let Err(e) = deliveries::unsent(db, later_keys).await {
            log::warn(
                COMPONENT,
                "deliveries_unsent_unmarked",
                log::fields! {"count": later_keys.len(), "err": error_message(&e)},
            );
        }
        return Err(Failure::new(
            ErrorCode::Unknown,
            format!(
                "the deliveries queue did not take the messages: {}; retrying",
                error_message(&e)
            ),
        ));
    }
    Ok(())
}

/// One WARN line per failed first attempt, as the `deliveries` consumer
/// logs its own.
fn log_failures(pending: &[Pending], processed: &[Processed], owed: &[Owed]) {
    for (((id, destination), p), o) in pending.iter().zip(processed).zip(owed) {
        let Some(AfterCall::Retry { failure, .. } | AfterCall::HandOff { failure }) = &p.after
        else {
            continue;
        };
        let (next, delay_s) = match o {
            Owed::Message(d) => ("retry", Some(*d)),
            _ => ("dead_letter", None),
        };
        log::delivery_failed(COMPONENT, (id, destination), None, failure, (next, delay_s));
    }
}
