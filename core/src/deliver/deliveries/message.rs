//! The message on the `deliveries` queue: one per delivery, so each has
//! its own platform `attempts`, its own `msg.retry` delays and its own
//! `max_retries` budget, and Cloudflare dead-letters it alone to
//! `webhooks-dlq`. It names the event and the destination; the body stays
//! in D1 (the event's row), so a message is small whatever the body.

use serde::{Deserialize, Serialize};

/// The `kind` value that marks a delivery message (an ingest message, a
/// [`crate::receive::queued_event::QueuedEvent`], has no `kind`).
pub const DELIVERY_KIND: &str = "delivery";

/// One delivery to make: `event_id` to `destination`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeliveryMessage {
    /// Message format version (1).
    pub v: u64,
    /// Always [`DELIVERY_KIND`].
    pub kind: String,
    /// The event (its row in `events` holds the body and headers).
    pub event_id: String,
    /// The event's idempotency key (for the envelope and the logs).
    pub idempotency_key: String,
    /// The event's source.
    pub source: String,
    /// The destination's name (`deliveries.destination`).
    pub destination: String,
    /// When the relay accepted the webhook (unix ms).
    pub received_at_ms: i64,
    /// A 2xx its holder received and could not record (DESIGN §3: the
    /// outcome travels on): when set, the message records the delivery
    /// `delivered` at this time and calls nothing. Absent on every other
    /// message, so a message without it reads the same in the previous
    /// release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_at_ms: Option<i64>,
}

impl DeliveryMessage {
    /// A version-1 delivery message.
    pub fn new(
        event_id: &str,
        idempotency_key: &str,
        source: &str,
        destination: &str,
        received_at_ms: i64,
    ) -> DeliveryMessage {
        DeliveryMessage {
            v: 1,
            kind: DELIVERY_KIND.to_string(),
            event_id: event_id.to_string(),
            idempotency_key: idempotency_key.to_string(),
            source: source.to_string(),
            destination: destination.to_string(),
            received_at_ms,
            delivered_at_ms: None,
        }
    }

    /// This delivery's message carrying a 2xx received at `delivered_at_ms`
    /// that its holder could not record.
    pub fn carrying_success(mut self, delivered_at_ms: i64) -> DeliveryMessage {
        self.delivered_at_ms = Some(delivered_at_ms);
        self
    }

    /// Reads a queue message body as a delivery message: `None` when it is
    /// not one (no `kind: "delivery"`), an error naming the field when it
    /// claims to be one and is malformed (poison).
    pub fn read(value: &serde_json::Value) -> Option<Result<DeliveryMessage, String>> {
        if value.get("kind").and_then(|k| k.as_str()) != Some(DELIVERY_KIND) {
            return None;
        }
        Some(
            serde_json::from_value::<DeliveryMessage>(value.clone())
                .map_err(|e| format!("delivery message: {e}"))
                .and_then(|m| {
                    if m.v == 1 {
                        Ok(m)
                    } else {
                        Err(format!("delivery message: unknown version {}", m.v))
                    }
                }),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_delivery_message_round_trips_and_others_are_not_one() {
        let m = DeliveryMessage::new("evt_1", "s:1", "s", "billing", 5);
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(DeliveryMessage::read(&v), Some(Ok(m.clone())));
        assert_eq!(
            DeliveryMessage::read(&json!({"v": 1, "event_id": "e"})),
            None
        );
        let bad = json!({"v": 1, "kind": "delivery", "event_id": "e"});
        assert!(matches!(DeliveryMessage::read(&bad), Some(Err(_))));
        let carried = m.clone().carrying_success(9);
        let cv = serde_json::to_value(&carried).unwrap();
        assert_eq!(cv["delivered_at_ms"], json!(9));
        assert_eq!(DeliveryMessage::read(&cv), Some(Ok(carried)));
        assert!(v.get("delivered_at_ms").is_none(), "absent unless carried");
        let mut extra = v.clone();
        extra["surprise"] = json!(1);
        assert!(matches!(DeliveryMessage::read(&extra), Some(Err(_))));
    }
}
