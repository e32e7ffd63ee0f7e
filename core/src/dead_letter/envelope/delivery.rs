//! A delivery's dead letter (DESIGN §4, kind `delivery`). A `deliveries`
//! message names the event and one destination and carries no body, so the
//! envelope reads the event from its `events` row (and `payloads` for a
//! large body) and keeps it whole as the `webhooks` message it was, for
//! replay. The entry dedupes per destination: two destinations failing on
//! one event make two entries, and a delivery entry never dedupes an ingest
//! entry.

use super::Envelope;
use crate::deliver::deliveries::message::DeliveryMessage;
use crate::receive::queued_event::{EventBody, QueuedEvent, MESSAGE_VERSION};
use crate::state::EntryKind;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// What the DLQ worker read of a delivery's event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EventRow {
    /// The provider's delivery id.
    pub delivery_id: Option<String>,
    /// When the relay accepted it (unix ms).
    pub received_at_ms: i64,
    /// The stored headers (redacted at ingest; redacted again here).
    pub headers: BTreeMap<String, String>,
    /// The body, when stored inline.
    pub body: Option<String>,
    /// `payloads.event_id`, when claim-checked.
    pub body_ref: Option<String>,
    /// The body's size in bytes.
    pub body_bytes: u64,
    /// The claim-checked body, read in the same statement.
    pub stored_body: Option<String>,
}

/// The event as the `webhooks` message carried it, rebuilt from its row:
/// the original an entry keeps for replay.
pub fn queued_event(message: &DeliveryMessage, row: &EventRow) -> QueuedEvent {
    let body = match (&row.body, &row.body_ref) {
        (None, Some(body_ref)) => EventBody::Stored {
            body_ref: body_ref.clone(),
            body_bytes: row.body_bytes,
        },
        (body, _) => EventBody::Inline {
            body: body.clone().unwrap_or_default(),
        },
    };
    QueuedEvent {
        v: MESSAGE_VERSION,
        event_id: message.event_id.clone(),
        idempotency_key: message.idempotency_key.clone(),
        source: message.source.clone(),
        delivery_id: row.delivery_id.clone(),
        received_at_ms: row.received_at_ms,
        headers: row.headers.clone(),
        body,
    }
}

/// The dedupe key of every new entry (DESIGN §4, "Dedupe"): SHA-256 of
/// (kind, source, destination, the event's idempotency key, body), each
/// part ended by a zero byte, after a tag no earlier key began with. The
/// idempotency key keeps two events with the same body apart: each that
/// fails makes its own entry, and stays replayable. The same event failing
/// again (a redelivered hand-off, a replay that failed) still joins its
/// pending entry. Entries stored before keep the hash they were stored
/// with (source and body for an ingest's; with kind and destination for a
/// delivery's): their rows are never rewritten, so a new dead letter never
/// joins one of them.
pub fn dedupe_hash(
    kind: EntryKind,
    source: &str,
    destination: Option<&str>,
    idempotency_key: Option<&str>,
    body: &[u8],
) -> String {
    let mut h = Sha256::new();
    for part in [
        b"\x02entry".as_slice(),
        kind.as_str().as_bytes(),
        source.as_bytes(),
        destination.unwrap_or_default().as_bytes(),
        idempotency_key.unwrap_or_default().as_bytes(),
    ] {
        h.update(part);
        h.update([0u8]);
    }
    h.update(body);
    hex::encode(h.finalize())
}

impl Envelope {
    /// The delivery this entry dead-letters, as (event id, destination):
    /// its `deliveries` row turns `dead_lettered` in the entry's write.
    pub fn closes_delivery(&self) -> Option<(&str, &str)> {
        match self.identity.kind {
            EntryKind::Delivery => self
                .identity
                .event_id
                .as_deref()
                .zip(self.identity.destination.as_deref()),
            EntryKind::Ingest => None,
        }
    }

    /// The event this entry marks `failed` as a whole: an ingest entry's
    /// (a delivery entry's event is summed up from its deliveries instead).
    pub fn fails_event(&self) -> Option<&str> {
        match self.identity.kind {
            EntryKind::Ingest => self.identity.event_id.as_deref(),
            EntryKind::Delivery => None,
        }
    }
}

#[cfg(test)]
mod tests;
