//! Step 2: ingest every decodable event of the batch, routed
//! (`hookrelay_platform::pipeline::ingest`), then send one message per
//! pending delivery to the `deliveries` queue, in as few `sendBatch` calls
//! as its limits allow. A redelivered or duplicate message re-sends the messages of its
//! deliveries still pending: harmless, since a delivered one is never
//! called again. If the send fails, the events' messages are retried.

use super::{Batch, COMPONENT};
use hookrelay_core::deliver::deliveries::message::DeliveryMessage;
use hookrelay_core::deliver::DeliveryConfig;
use hookrelay_core::retry::disposition::Outcome;
use hookrelay_core::state::error_code::{ErrorCode, Failure};
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
    delivery: Option<&DeliveryConfig>,
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
    let Some(delivery) = delivery else {
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
    let results = ingest_and_enqueue(env, &items, delivery, now).await;
    for (i, outcome) in indexes.into_iter().zip(results) {
        outcomes[i] = outcome;
    }
    outcomes
}

/// The decoded `items`' outcomes: ingested, then their pending deliveries
/// sent (the `CONTROL` queue carrying the first step of a drain that a
/// legacy parked event's copy started).
async fn ingest_and_enqueue(
    env: &Env,
    items: &[Item<'_>],
    delivery: &DeliveryConfig,
    now: i64,
) -> Vec<Outcome> {
    let db = match env.d1("DB") {
        Ok(db) => db,
        Err(e) => {
            let failure = Failure::new(
                ErrorCode::D1Unavailable,
                format!("D1 binding DB: {}", error_message(&e)),
            );
            return vec![Outcome::Failed(failure); items.len()];
        }
    };
    let control = env.queue("CONTROL").ok();
    let (processed, pending) =
        pipeline::ingest(&db, items, delivery, (COMPONENT, control.as_ref()), now).await;
    let mut results: Vec<Outcome> = processed.into_iter().map(|p| p.outcome).collect();
    if let Err(f) = enqueue(env, items, pending).await {
        // Nothing is acked before its deliveries are on the queue.
        for r in results.iter_mut() {
            if !matches!(r, Outcome::Failed(_)) {
                *r = Outcome::Failed(f.clone());
            }
        }
    }
    results
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
        let Some(item) = items.iter().find(|i| i.event.event_id == *event_id) else {
            continue;
        };
        let e = item.event;
        let m = DeliveryMessage::new(
            &e.event_id,
            &e.idempotency_key,
            &e.source,
            destination,
            e.received_at_ms,
        );
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
