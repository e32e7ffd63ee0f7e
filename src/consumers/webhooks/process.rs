//! Step 2: ingest every decodable event of the batch, routed
//! (`hookrelay_platform::pipeline::ingest`), then make each new delivery's
//! first attempt (`super::first_attempt`), which sends on to the
//! `deliveries` queue only what it did not settle. A redelivered or
//! duplicate message takes up only the deliveries that are pending with no
//! message outstanding (`deliveries::to_send`): one waiting out its backoff
//! keeps its own message and its count. If a send fails, the deliveries
//! are marked unsent and the events' messages are retried.
//! ([`enqueue`] sends every delivery's message instead: with
//! `FIRST_ATTEMPT_BUDGET=0s`, and for a replay's re-ingest.)

use super::first_attempt::first_attempts;
use super::{Batch, COMPONENT};
use hookrelay_core::deliver::deliveries::message::DeliveryMessage;
use hookrelay_core::deliver::DeliveryConfig;
use hookrelay_core::retry::disposition::Outcome;
use hookrelay_core::retry::policy::RetrySchedule;
use hookrelay_core::state::error_code::{ErrorCode, Failure};
use hookrelay_platform::db::deliveries;
use hookrelay_platform::db::error_message;
use hookrelay_platform::pipeline::{self, Item, Pending};
use hookrelay_platform::{log, queue_send};
use worker::Env;

/// The producer binding of the `deliveries` queue.
pub const DELIVERIES_BINDING: &str = "DELIVERIES";

/// Each message's outcome. Undecodable messages keep their poison failure.
/// Without a valid configuration nothing is attempted, and every message is
/// retried until the configuration is fixed.
pub async fn process(
    env: &Env,
    batch: &Batch<'_>,
    delivery: Option<(&DeliveryConfig, &RetrySchedule)>,
    now: i64,
) -> Vec<Outcome> {
    let mut outcomes: Vec<Outcome> = batch
        .decoded
        .iter()
        .map(|r| match r {
            Ok(_) => Outcome::Failed(Failure::new(
                ErrorCode::Unknown,
                "the relay configuration is invalid; see the config_invalid log line",
            )),
            Err(f) => Outcome::Failed(f.clone()),
        })
        .collect();
    let Some((delivery, retry)) = delivery else {
        return outcomes;
    };
    let (indexes, items): (Vec<usize>, Vec<Item>) = batch
        .decoded
        .iter()
        .zip(batch.messages)
        .enumerate()
        .filter_map(|(i, (r, m))| {
            r.as_ref().ok().map(|event| {
                let item = Item {
                    event,
                    queue_message_id: m.id.as_str(),
                };
                (i, item)
            })
        })
        .unzip();
    if items.is_empty() {
        return outcomes;
    }
    let results = ingest_and_attempt(env, (delivery, retry), &items, now).await;
    for (i, outcome) in indexes.into_iter().zip(results) {
        outcomes[i] = outcome;
    }
    outcomes
}

/// Ingests the items, then makes their deliveries' first attempts: each
/// item's outcome (a failed send fails every item, so nothing is acked
/// before its deliveries are on their way).
async fn ingest_and_attempt(
    env: &Env,
    (delivery, retry): (&DeliveryConfig, &RetrySchedule),
    items: &[Item<'_>],
    now: i64,
) -> Vec<Outcome> {
    match env.d1("DB") {
        Ok(db) => {
            let (processed, pending) = pipeline::ingest(&db, items, delivery, COMPONENT, now).await;
            let mut results: Vec<Outcome> = processed.into_iter().map(|p| p.outcome).collect();
            let attempted = first_attempts((env, &db), (delivery, retry), items, pending, now);
            if let Err(f) = attempted.await {
                // Nothing is acked before its deliveries are on the queue.
                for r in results.iter_mut() {
                    if !matches!(r, Outcome::Failed(_)) {
                        *r = Outcome::Failed(f.clone());
                    }
                }
            }
            results
        }
        Err(e) => {
            let failure = Failure::new(
                ErrorCode::D1Unavailable,
                format!("D1 binding DB: {}", error_message(&e)),
            );
            vec![Outcome::Failed(failure); items.len()]
        }
    }
}

/// Sends one `DeliveryMessage` per pending delivery (in as few `sendBatch`
/// calls as the queue takes: 150 for 50 events with three routes is two).
pub async fn enqueue(
    env: &Env,
    items: &[Item<'_>],
    pending: Result<Vec<Pending>, String>,
) -> Result<(), Failure> {
    let pending = pending.map_err(|e| {
        Failure::new(
            ErrorCode::D1Unavailable,
            format!("the pending deliveries could not be read: {e}"),
        )
    })?;
    let mut messages: Vec<String> = Vec::with_capacity(pending.len());
    for (event_id, destination) in &pending {
        let Some(m) = delivery_message(items, event_id, destination) else {
            continue;
        };
        if let Ok(json) = serde_json::to_string(&m) {
            messages.push(json);
        }
    }
    if messages.is_empty() {
        return Ok(());
    }
    let sent = match env.queue(DELIVERIES_BINDING) {
        Ok(q) => queue_send::send_json_batch(&q, &messages).await,
        Err(e) => Err(e),
    };
    if sent.is_err() {
        // They were marked outstanding when read: mark them unsent, so the
        // message's retry (or the periodic check) sends them at once.
        let keys: Vec<(&str, &str)> = pending
            .iter()
            .map(|(e, d)| (e.as_str(), d.as_str()))
            .collect();
        if let Ok(db) = env.d1("DB") {
            if let Err(e) = deliveries::unsent(&db, &keys).await {
                log::warn(
                    COMPONENT,
                    "deliveries_unsent_unmarked",
                    log::fields! {"count": keys.len(), "err": error_message(&e)},
                );
            }
        }
    }
    sent.map_err(|e| {
        log::error(
            COMPONENT,
            "deliveries_send_failed",
            log::fields! {"count": messages.len(), "err": error_message(&e)},
        );
        Failure::new(
            ErrorCode::Unknown,
            format!("the deliveries queue (binding {DELIVERIES_BINDING}) did not take the messages: {}; retrying", error_message(&e)),
        )
    })
}

/// The `deliveries` message of one delivery of the batch's events.
pub fn delivery_message(
    items: &[Item<'_>],
    event_id: &str,
    destination: &str,
) -> Option<DeliveryMessage> {
    let e = items.iter().find(|i| i.event.event_id == event_id)?.event;
    Some(DeliveryMessage::new(
        &e.event_id,
        &e.idempotency_key,
        &e.source,
        destination,
        e.received_at_ms,
    ))
}
