//! What a queue destination (`{"queue": "<binding>"}`, DESIGN §3) receives:
//! one message on the user's own Cloudflare Queue per delivery, a JSON
//! object carrying the event (its ids and key, source, destination,
//! received time, redacted headers, content type) and its body. A body too
//! large for a queue message (Cloudflare refuses one over 128 KB; the same
//! margin as the ingest's claim check, `crate::receive::claim_check`) goes to the R2
//! archive first, under [`body_key`], and the message names that key
//! instead. The retention sweep removes the object with the event
//! (`crate::retention`, by the same key).
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

/// The large-body objects the sweep deletes with a chunk of events
/// (`rows`: their ids and received times). An object whose message may
/// still sit on the user's queue (sent less than [`CLAIM_HOLD_MS`] ago, the
/// longest a message lives on two queues) stays, as a claim-checked body
/// does: a sweep under the size cap takes young events, and their
/// consumer must still find the body the message names. Such an object
/// outlives its event in R2 (docs/destinations.md says so).
pub fn bodies_to_delete(rows: &[ChunkRow], now_ms: i64) -> Vec<String> {
    rows.iter()
        .filter(|r| r.at < now_ms.saturating_sub(CLAIM_HOLD_MS))
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
    fn the_sweep_deletes_a_body_only_once_its_message_cannot_be_queued_any_more() {
        let now = 100 * 86_400_000;
        let row = |id: &str, at: i64| ChunkRow { id: id.into(), at };
        let rows = [
            row("evt_old", now - CLAIM_HOLD_MS - 1),
            row("evt_at_the_hold", now - CLAIM_HOLD_MS),
            row("evt_young", now - 60_000),
        ];
        assert_eq!(bodies_to_delete(&rows, now), vec![body_key("evt_old")]);
        assert!(bodies_to_delete(&[], now).is_empty());
    }
}
