//! What a queue destination (`{"queue": "<binding>"}`, DESIGN §3) receives:
//! one message on the user's own Cloudflare Queue per delivery, a JSON
//! object carrying the event (its ids and key, source, destination,
//! received time, redacted headers, content type) and its body. A body too
//! large for a queue message (Cloudflare refuses one over 128 KB; the same
//! margin as the ingest's claim check, `crate::receive::claim_check`) goes to the R2
//! archive first, under [`body_key`], and the message names that key
//! instead.
//!
//! **How long such an object is kept: [`CLAIM_HOLD_MS`] after its last
//! send.** A delivery can be sent long after its event arrived (a retry, a
//! drain after days parked, a replay weeks later), and its message may then
//! wait that long on the user's queue; the event's age says nothing about
//! it. Every send puts the object again before it sends, and records its
//! send time first (`destination_bodies.sent_at`, migration 0025, kept at
//! the latest send), so the record is never older than the object. The
//! maintenance run deletes an object once that time is older than the hold
//! ([`sent_before`], [`expired_bodies`]) and drops its record with it.
//! Why a row in D1 rather than the object's own upload time: reading that
//! costs an R2 call per object, and once the event has left D1 nothing
//! would lead the sweep back to an object still held; the row costs one D1
//! write per send of a body too large for a message (beside the R2 put of
//! 128 KB or more it already makes), outlives its event, and is read in
//! one indexed statement for up to [`BODIES_PER_RUN`] objects. An object
//! put before the record existed has no row: it still leaves with its
//! event once the event is older than the hold ([`bodies_to_delete`]).
//!
//! R2 has no conditional delete, so a send that records and puts a body in
//! the instant between a run's read of an expired record and its delete
//! could lose the object: the read skips every body whose event has a
//! delivery leased (`delivering`), which leaves only a send claimed in that
//! instant.
//!
//! The message is not signed: it is on the user's own queue, which only
//! their account's Workers can write to.

use crate::receive::claim_check::fits_inline;
use crate::receive::queued_event::QueuedEvent;
use crate::retention::plan::ChunkRow;
use crate::retention::tables::CLAIM_HOLD_MS;
use serde::Serialize;
use std::collections::BTreeMap;

/// The message format's version (`"v"`).
pub const MESSAGE_VERSION: u64 = 1;

/// Where the R2 objects of queue destinations' large bodies live.
pub const BODY_PREFIX: &str = "destination-bodies/";

/// The R2 key of event `event_id`'s body, for a queue destination whose
/// message could not carry it: one per event, whatever its destinations
/// (they send the same bytes), so a retry or a second destination writes
/// the same object again.
pub fn body_key(event_id: &str) -> String {
    format!(
        "{BODY_PREFIX}{}",
        crate::retention::archive_key::encode(event_id)
    )
}

/// One message for a queue destination, as JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueMessage {
    /// The body travels in the message.
    Inline(String),
    /// The body goes to R2 under `key` first; the message names the key.
    Stored {
        /// The message.
        json: String,
        /// The R2 key the message names.
        key: String,
    },
}

#[derive(Serialize)]
struct Message<'a> {
    v: u64,
    event_id: &'a str,
    idempotency_key: &'a str,
    source: &'a str,
    destination: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    delivery_id: Option<&'a str>,
    received_at_ms: i64,
    headers: &'a BTreeMap<String, String>,
    content_type: &'a str,
    body: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    body_r2_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    body_bytes: Option<usize>,
}

/// The message carrying `event` (with `body`) to `destination`: inline
/// when it fits a queue message, else with its body in R2.
pub fn queue_message(event: &QueuedEvent, destination: &str, body: &str) -> QueueMessage {
    let content_type = event
        .headers
        .get("content-type")
        .map(String::as_str)
        .filter(|ct| !ct.trim().is_empty())
        .unwrap_or("application/json");
    let mut m = Message {
        v: MESSAGE_VERSION,
        event_id: &event.event_id,
        idempotency_key: &event.idempotency_key,
        source: &event.source,
        destination,
        delivery_id: event.delivery_id.as_deref(),
        received_at_ms: event.received_at_ms,
        headers: &event.headers,
        content_type,
        body: Some(body),
        body_r2_key: None,
        body_bytes: None,
    };
    let inline = to_json(&m);
    if fits_inline(inline.len()) {
        return QueueMessage::Inline(inline);
    }
    let key = body_key(&event.event_id);
    m.body = None;
    m.body_r2_key = Some(&key);
    m.body_bytes = Some(body.len());
    QueueMessage::Stored {
        json: to_json(&m),
        key,
    }
}

fn to_json(m: &Message<'_>) -> String {
    // A struct of strings, numbers and a string map always serializes.
    serde_json::to_string(m).unwrap_or_default()
}

/// Most bodies one maintenance run deletes: one R2 delete takes up to
/// 1,000 keys, and half of that keeps the run's D1 statements small.
pub const BODIES_PER_RUN: u32 = 500;

/// An object last sent before this may go: no message naming it can still
/// wait on the user's queue, which holds one at most [`CLAIM_HOLD_MS`] (the
/// longest a message lives on two queues, as for a claim-checked body).
pub fn sent_before(now_ms: i64) -> i64 {
    now_ms.saturating_sub(CLAIM_HOLD_MS)
}

/// The keys of the objects to delete among `sent` (event id, last send),
/// as read from `destination_bodies`: those whose hold has passed.
pub fn expired_bodies(sent: &[(String, i64)], now_ms: i64) -> Vec<String> {
    let before = sent_before(now_ms);
    sent.iter()
        .filter(|(_, at)| *at < before)
        .map(|(id, _)| body_key(id))
        .collect()
}

/// The objects the sweep deletes with a chunk of events (`rows`: their ids
/// and ingest times): only those no send has recorded (`tracked`: the ids
/// with a `destination_bodies` row, whose objects [`expired_bodies`]
/// decides), which were put before the record existed, and only once
/// their event is older than the hold, so no message they were sent with
/// can still be queued. A recorded object stays after its event leaves D1,
/// until its own hold passes.
pub fn bodies_to_delete(rows: &[ChunkRow], tracked: &[String], now_ms: i64) -> Vec<String> {
    let before = sent_before(now_ms);
    rows.iter()
        .filter(|r| r.at < before && !tracked.contains(&r.id))
        .map(|r| body_key(&r.id))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::receive::claim_check::INLINE_MESSAGE_LIMIT_BYTES;
    use crate::receive::queued_event::EventBody;
    use serde_json::{json, Value};

    fn event(body: &str) -> QueuedEvent {
        QueuedEvent {
            v: 1,
            event_id: "evt_0123abcd".into(),
            idempotency_key: "shop:d-1".into(),
            source: "shop".into(),
            delivery_id: Some("d-1".into()),
            received_at_ms: 1_700_000_000_123,
            headers: [
                ("content-type".to_string(), "application/json".to_string()),
                ("x-signature".to_string(), "[REDACTED]".to_string()),
            ]
            .into_iter()
            .collect(),
            body: EventBody::Inline { body: body.into() },
        }
    }

    #[test]
    fn a_small_body_travels_in_the_message_with_everything_the_design_lists() {
        let body = r#"{"total":5}"#;
        let QueueMessage::Inline(json) = queue_message(&event(body), "jobs", body) else {
            panic!("inline");
        };
        let v: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            v,
            json!({"v": 1, "event_id": "evt_0123abcd", "idempotency_key": "shop:d-1", "source": "shop",
                "destination": "jobs", "delivery_id": "d-1", "received_at_ms": 1_700_000_000_123_i64,
                "headers": {"content-type": "application/json", "x-signature": "[REDACTED]"},
                "content_type": "application/json", "body": body})
        );
    }

    #[test]
    fn a_body_too_large_for_a_queue_message_goes_to_r2_under_the_key_the_message_names() {
        let fits = "x".repeat(INLINE_MESSAGE_LIMIT_BYTES - 600);
        assert!(matches!(
            queue_message(&event(&fits), "jobs", &fits),
            QueueMessage::Inline(_)
        ));
        let large = "y".repeat(INLINE_MESSAGE_LIMIT_BYTES);
        let QueueMessage::Stored { json, key } = queue_message(&event(&large), "jobs", &large)
        else {
            panic!("stored");
        };
        assert_eq!(key, "destination-bodies/evt_0123abcd");
        assert_eq!(key, body_key("evt_0123abcd"));
        let v: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["body"], Value::Null);
        assert_eq!(v["body_r2_key"], key);
        assert_eq!(v["body_bytes"], INLINE_MESSAGE_LIMIT_BYTES);
        assert_eq!(v["content_type"], "application/json");
        assert!(json.len() < 2_000, "the message stays small");
    }

    #[test]
    fn a_key_cannot_be_bent_by_an_odd_event_id() {
        assert_eq!(body_key("a/b~c"), "destination-bodies/a%2Fb%7Ec");
    }

    #[test]
    fn a_body_goes_only_once_the_hold_after_its_last_send_has_passed() {
        let now = 100 * 86_400_000;
        let sent = |id: &str, at: i64| (id.to_string(), at);
        // (last send, deleted?)
        let table = [
            (now - CLAIM_HOLD_MS - 1, true),
            (now - CLAIM_HOLD_MS, false),
            // Replayed yesterday, whatever the event's own age.
            (now - 86_400_000, false),
            (now, false),
            // A send stamped after now (another isolate's clock) is held.
            (now + 5_000, false),
        ];
        for (at, deleted) in table {
            let want = if deleted {
                vec![body_key("evt")]
            } else {
                vec![]
            };
            assert_eq!(
                expired_bodies(&[sent("evt", at)], now),
                want,
                "sent at {at}"
            );
        }
        assert!(expired_bodies(&[], now).is_empty());
        assert_eq!(sent_before(5), 5 - CLAIM_HOLD_MS);
    }

    #[test]
    fn the_event_sweep_deletes_only_an_unrecorded_body_whose_message_cannot_be_queued_any_more() {
        let now = 100 * 86_400_000;
        let row = |id: &str, at: i64| ChunkRow { id: id.into(), at };
        let rows = [
            row("evt_old", now - CLAIM_HOLD_MS - 1),
            row("evt_at_the_hold", now - CLAIM_HOLD_MS),
            row("evt_young", now - 60_000),
            // Old, but sent again since: its record decides.
            row("evt_old_resent", now - CLAIM_HOLD_MS - 1),
        ];
        let tracked = ["evt_old_resent".to_string(), "evt_young".to_string()];
        assert_eq!(
            bodies_to_delete(&rows, &tracked, now),
            vec![body_key("evt_old")]
        );
        assert_eq!(
            bodies_to_delete(&rows, &[], now),
            vec![body_key("evt_old"), body_key("evt_old_resent")]
        );
        assert!(bodies_to_delete(&[], &tracked, now).is_empty());
    }
}
