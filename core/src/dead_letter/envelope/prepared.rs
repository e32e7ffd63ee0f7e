//! An envelope in two stages, so that a batch of DLQ messages costs one D1
//! read instead of one per message. What the message alone says (where it
//! came from, the event inside it, its entry id, the dedupe key of a body it
//! carries inline) is read first, for every message of the batch; the
//! attempt histories and claim-checked bodies those messages name are then
//! read together, and each envelope is finished from them. A delivery
//! message's event is read from its row ([`Prepared::attach_event`]), so its
//! dedupe key is only known after the read.

use super::delivery::{dedupe_hash, queued_event, EventRow};
use super::{
    body_parts, entry_id, error_signature, final_failure, headers_of, identity, merged_history,
    origin, redact_original, AttemptRecord, DeliveryState, Envelope, FailureEvidence, Identity,
    Input, Origin, Timing, Transport, EXCERPT_BYTES,
};
use crate::deliver::deliveries::message::DeliveryMessage;
use crate::receive::queued_event::{decode_value, EventBody, QueuedEvent};
use crate::state::EntryKind;
use crate::support::queue_names::OriginQueues;
use crate::support::redact::truncate;
use crate::UnixMillis;
use serde_json::Value;

/// A DLQ message read on its own, before its D1 evidence is known.
pub struct Prepared {
    origin: Origin,
    event: Option<QueuedEvent>,
    identity: Identity,
    /// The dedupe key, when the body is in the message (not claim-checked,
    /// not a delivery's).
    inline_hash: Option<String>,
    /// The `deliveries` message, when the dead letter is one.
    delivery: Option<DeliveryMessage>,
    /// A delivery's claim-checked body, read with its event's row.
    stored_body: Option<String>,
    /// A delivery whose event's row was not found.
    event_missing: bool,
}

impl Prepared {
    /// Reads one DLQ message (`body`, its queue message id and timestamp);
    /// `queues` names the relay queue it failed on when it does not say.
    pub fn new(
        body: Value,
        queue_message_id: &str,
        enqueued_at_ms: UnixMillis,
        queues: &OriginQueues,
    ) -> Prepared {
        let origin = origin(body, queue_message_id, enqueued_at_ms);
        let delivery = DeliveryMessage::read(&origin.original).and_then(Result::ok);
        let (event, identity) = match &delivery {
            Some(d) => (None, delivery_identity(d, &origin, queues)),
            None => {
                let event = decode_value(&origin.original).ok();
                let id = identity(event.as_ref(), &origin, queues);
                (event, id)
            }
        };
        let mut prepared = Prepared {
            origin,
            event,
            identity,
            inline_hash: None,
            // An event missing until its row is attached.
            event_missing: delivery.is_some(),
            delivery,
            stored_body: None,
        };
        if prepared.body_ref().is_none() && prepared.delivery.is_none() {
            prepared.inline_hash = Some(prepared.content_hash(None));
        }
        prepared
    }

    /// The (event id, destination) of a delivery message: its event's row
    /// and that destination's attempts are read for it.
    pub fn delivery_key(&self) -> Option<(&str, &str)> {
        self.delivery
            .as_ref()
            .map(|d| (d.event_id.as_str(), d.destination.as_str()))
    }

    /// Gives a delivery message its event, read from the event's row: the
    /// original becomes the event as the `webhooks` message carried it.
    /// `None` (the row is gone, swept) keeps the delivery message as the
    /// original and says so in the envelope.
    pub fn attach_event(&mut self, row: Option<EventRow>) {
        let (Some(d), Some(row)) = (&self.delivery, row) else {
            return;
        };
        let event = queued_event(d, &row);
        self.origin.original = redact_original(serde_json::to_value(&event).unwrap_or_default());
        self.event = Some(event);
        self.stored_body = row.stored_body;
        self.event_missing = false;
    }

    /// The original queue message id: the consumer recorded its attempts
    /// under it.
    pub fn original_message_id(&self) -> &str {
        &self.identity.queue_message_id
    }

    /// The event id, when the message names one.
    pub fn event_id(&self) -> Option<&str> {
        self.identity.event_id.as_deref()
    }

    /// The entry id (`dlq_…`) this message is stored under.
    pub fn entry_id(&self) -> String {
        entry_id(&self.identity.queue_message_id)
    }

    /// Where the body is claim-checked (`payloads.event_id`), if it is.
    pub fn body_ref(&self) -> Option<&str> {
        match self.event.as_ref().map(|e| &e.body) {
            Some(EventBody::Stored { body_ref, .. }) => Some(body_ref),
            _ => None,
        }
    }

    /// The dedupe key, known before any read unless the body is claim-checked.
    pub fn inline_content_hash(&self) -> Option<&str> {
        self.inline_hash.as_deref()
    }

    /// The dedupe key, given the claim-checked body when there is one.
    pub fn content_hash(&self, stored_body: Option<&str>) -> String {
        if let Some(hash) = &self.inline_hash {
            return hash.clone();
        }
        let stored_body = stored_body.or(self.stored_body.as_deref());
        let (text, _, _) = body_parts(self.event.as_ref(), &self.origin.original, stored_body);
        dedupe_hash(
            self.identity.kind,
            self.identity.source.as_deref().unwrap_or(""),
            self.identity.destination.as_deref(),
            self.identity.idempotency_key.as_deref(),
            text.as_bytes(),
        )
    }

    /// The whole envelope, from the recorded attempts (any order), the
    /// claim-checked body if it was loaded, and the DLQ worker's clock.
    pub fn finish(
        self,
        history: Vec<AttemptRecord>,
        stored_body: Option<&str>,
        now_ms: UnixMillis,
    ) -> Envelope {
        let hash = self.content_hash(stored_body);
        let Prepared {
            origin: o,
            event,
            identity,
            stored_body: own_body,
            event_missing,
            delivery,
            ..
        } = self;
        let stored_body = stored_body.or(own_body.as_deref());
        let history = merged_history(history, o.handoff.as_ref());
        let failure = final_failure(o.handoff.as_ref(), &history);
        let attempts = history
            .iter()
            .map(|a| a.attempt)
            .max()
            .unwrap_or(0)
            .max(o.handoff.as_ref().map_or(0, |h| h.attempts));
        let (body_text, body_bytes, body_ref) =
            body_parts(event.as_ref(), &o.original, stored_body);
        let excerpt = truncate(&body_text, EXCERPT_BYTES).to_string();
        Envelope {
            id: entry_id(&identity.queue_message_id),
            kind: o.kind,
            identity,
            timing: Timing {
                enqueued_at_ms: o.enqueued_at_ms,
                received_at_ms: event
                    .as_ref()
                    .map(|e| e.received_at_ms)
                    .or(delivery.map(|d| d.received_at_ms)),
                first_attempt_at_ms: history.first().map(|a| a.at_ms),
                last_attempt_at_ms: history.last().map(|a| a.at_ms),
                dead_lettered_at_ms: now_ms,
            },
            delivery: DeliveryState { attempts, history },
            failure: FailureEvidence {
                signature: error_signature(failure.code, &failure.message),
                code: failure.code,
                class: failure.class(),
                message: failure.message,
            },
            transport: Transport {
                headers: headers_of(&o.original),
                delivery_id: event.as_ref().and_then(|e| e.delivery_id.clone()),
            },
            input: Input {
                excerpt_truncated: excerpt.len() < body_text.len(),
                excerpt,
                body_bytes,
                body_ref,
                content_hash: hash,
                original: o.original,
                event_missing,
            },
        }
    }
}

/// Who a delivery message's event is, and which destination failed.
fn delivery_identity(d: &DeliveryMessage, origin: &Origin, queues: &OriginQueues) -> Identity {
    Identity {
        kind: EntryKind::Delivery,
        destination: Some(d.destination.clone()),
        event_id: Some(d.event_id.clone()),
        idempotency_key: Some(d.idempotency_key.clone()),
        source: Some(d.source.clone()),
        queue: origin.queue(queues, true),
        queue_message_id: origin.original_id.clone(),
    }
}
