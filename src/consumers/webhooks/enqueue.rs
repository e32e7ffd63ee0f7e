//! Sending each delivery's `deliveries` message (one `DeliveryMessage` per
//! delivery, in as few `sendBatch` calls as the queue takes), shared by the
//! ingest step (`super::process`), the first attempts
//! (`super::first_attempt`) and a replay's re-ingest.

use super::COMPONENT;
use hookrelay_core::deliver::deliveries::message::DeliveryMessage;
use hookrelay_core::state::error_code::{ErrorCode, Failure};
use hookrelay_platform::db::{deliveries, error_message};
use hookrelay_platform::pipeline::{Item, Pending};
use hookrelay_platform::{log, queue_send};
use worker::Env;

/// The producer binding of the `deliveries` queue.
pub const DELIVERIES_BINDING: &str = "DELIVERIES";

/// Sends one `DeliveryMessage` per pending delivery (in as few `sendBatch`
/// calls as the queue takes: 150 for 50 events with three routes is two).
pub async fn enqueue(
    env: &Env,
    items: &[Item<'_>],
    pending: Result<Vec<Pending>, String>,
) -> Result<(), Failure> {
    let pending = read_pending(pending)?;
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

/// The deliveries to send, or why they could not be read (then nothing is
/// acked: the events' messages are retried).
pub fn read_pending(pending: Result<Vec<Pending>, String>) -> Result<Vec<Pending>, Failure> {
    pending.map_err(|e| {
        Failure::new(
            ErrorCode::D1Unavailable,
            format!("the pending deliveries could not be read: {e}"),
        )
    })
}
