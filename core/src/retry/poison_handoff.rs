//! The message the consumer puts on `webhooks-dlq` for a poison failure.
//!
//! Cloudflare's own dead-lettering moves the original message and carries no
//! reason. A poison failure skips the retry budget, so the consumer sends
//! this hand-off instead: the original message plus why it failed. The DLQ
//! worker tells the two apart by the `kind` field.

use crate::state::error_code::{Failure, FailureClass};
use crate::UnixMillis;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `kind` value that marks a hand-off.
pub const HANDOFF_KIND: &str = "poison_handoff";

/// A poison message handed to `webhooks-dlq` by the consumer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoisonHandoff {
    /// Always [`HANDOFF_KIND`].
    pub kind: String,
    /// Why it failed.
    pub failure: Failure,
    /// Its class (always poison today; stored so readers need not re-derive it).
    pub class: FailureClass,
    /// The platform attempt on which it failed.
    pub attempts: u32,
    /// The original queue message id.
    pub queue_message_id: String,
    /// When the original message was enqueued (unix ms).
    pub enqueued_at_ms: UnixMillis,
    /// When the consumer gave up on it (unix ms).
    pub failed_at_ms: UnixMillis,
    /// The original message body, whole.
    pub original: Value,
    /// The queue the original was consumed from (the batch's queue name).
    /// A hand-off sent before it carried one reads as `None`, and the DLQ
    /// worker names the configured queue of its kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
}

/// The `queue_message_id` the relay's own hand-off of one delivery carries,
/// which the DLQ worker stores its entry under
/// (`crate::dead_letter::envelope::entry_id`): the event's message id and
/// the destination, so one event's deliveries to two destinations make
/// two entries; and, for a delivery a replay made pullable again (a pull
/// destination's, DESIGN §3), when that was, so that its next dead letter
/// is an entry of its own rather than the replayed one. A re-sent copy of
/// one hand-off carries the same id, so it joins its entry.
pub fn delivery_handoff_id(
    message_id: &str,
    destination: &str,
    revived_at: Option<UnixMillis>,
) -> String {
    match revived_at {
        None => format!("{message_id}/{destination}"),
        Some(at) => format!("{message_id}/{destination}/revived-{at}"),
    }
}

impl PoisonHandoff {
    /// Builds a hand-off for `original` that failed with `failure`.
    pub fn new(
        failure: Failure,
        attempts: u32,
        queue_message_id: String,
        enqueued_at_ms: UnixMillis,
        failed_at_ms: UnixMillis,
        original: Value,
    ) -> PoisonHandoff {
        PoisonHandoff {
            kind: HANDOFF_KIND.to_string(),
            class: failure.class(),
            failure,
            attempts,
            queue_message_id,
            enqueued_at_ms,
            failed_at_ms,
            original,
            queue: None,
        }
    }

    /// The hand-off, saying the queue its original was consumed from.
    pub fn from_queue(mut self, queue: &str) -> PoisonHandoff {
        self.queue = Some(queue.to_string());
        self
    }

    /// Reads a DLQ message as a hand-off, or `None` if it is an original
    /// message that Cloudflare moved after `max_retries`.
    pub fn from_dlq_message(value: &Value) -> Option<PoisonHandoff> {
        if value.get("kind")?.as_str()? != HANDOFF_KIND {
            return None;
        }
        serde_json::from_value(value.clone()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::error_code::ErrorCode;
    use serde_json::json;

    #[test]
    fn each_delivery_and_each_revival_hands_off_under_its_own_id() {
        let ids = [
            delivery_handoff_id("m-1", "billing", None),
            delivery_handoff_id("m-1", "crm", None),
            delivery_handoff_id("m-1", "billing", Some(5_000)),
            delivery_handoff_id("m-1", "billing", Some(6_000)),
        ];
        for (i, a) in ids.iter().enumerate() {
            for b in &ids[i + 1..] {
                assert_ne!(a, b);
            }
        }
        // A copy of one hand-off joins its entry: the same id.
        assert_eq!(ids[0], delivery_handoff_id("m-1", "billing", None));
        assert_eq!(ids[2], "m-1/billing/revived-5000");
    }

    #[test]
    fn a_handoff_roundtrips_and_is_told_apart_from_an_original_message() {
        let h = PoisonHandoff::new(
            Failure::new(ErrorCode::BadPayload, "message is not JSON"),
            1,
            "m1".into(),
            10,
            20,
            json!("garbage"),
        );
        let value = serde_json::to_value(&h).unwrap();
        assert_eq!(value["failure"]["code"], "BAD_PAYLOAD");
        assert_eq!(value["class"], "poison");
        assert_eq!(PoisonHandoff::from_dlq_message(&value), Some(h));
        assert_eq!(
            PoisonHandoff::from_dlq_message(&json!({"v": 1, "event_id": "e"})),
            None
        );
        assert_eq!(PoisonHandoff::from_dlq_message(&json!("garbage")), None);
    }

    #[test]
    fn a_handoff_carries_its_queue_and_an_older_one_reads_without() {
        let h = PoisonHandoff::new(
            Failure::new(ErrorCode::BadPayload, "message is not JSON"),
            1,
            "m1".into(),
            10,
            20,
            json!("garbage"),
        );
        let mut old = serde_json::to_value(&h).unwrap();
        assert!(old.get("queue").is_none());
        assert_eq!(PoisonHandoff::from_dlq_message(&old).unwrap().queue, None);
        let with = h.from_queue("webhooks-staging");
        let value = serde_json::to_value(&with).unwrap();
        assert_eq!(value["queue"], "webhooks-staging");
        assert_eq!(PoisonHandoff::from_dlq_message(&value), Some(with));
        old["queue"] = json!(null);
        assert_eq!(PoisonHandoff::from_dlq_message(&old).unwrap().queue, None);
    }
}
