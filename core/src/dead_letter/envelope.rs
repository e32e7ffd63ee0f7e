//! The dead-letter envelope: everything an on-call engineer needs to debug
//! and replay one dead letter, built from the DLQ message and the attempt
//! history the consumer recorded in D1.
//!
//! Two kinds of DLQ message arrive: a [`PoisonHandoff`] the consumer sent
//! with its reason, and an original message that Cloudflare moved after
//! `max_retries` with no reason at all. Both become one envelope shape. The
//! original is a `webhooks` message (an entry of kind `ingest`) or a
//! `deliveries` message (kind `delivery`: one destination's failure, whose
//! event is read from its row, see [`delivery`]).

pub use crate::dead_letter::error_signature::{error_signature, normalize_message};
use crate::dead_letter::root_cause::root_cause;
use crate::receive::queued_event::{decode_value, EventBody, QueuedEvent};
pub use crate::retry::attempt::AttemptRecord;
use crate::retry::poison_handoff::PoisonHandoff;
use crate::state::error_code::{ErrorCode, Failure, FailureClass};
use crate::state::EntryKind;
use crate::support::queue_names::OriginQueues;
use crate::support::redact::redact_map;
use crate::UnixMillis;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Bytes of the original body kept for display.
pub const EXCERPT_BYTES: usize = 4096;

/// How the message reached the DLQ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeadLetterKind {
    /// The consumer handed a poison message over at once.
    PoisonHandoff,
    /// Its retries ran out: the relay handed over its sixth failure, or
    /// Cloudflare moved it after `max_retries`.
    RetriesExhausted,
}

impl DeadLetterKind {
    /// The stored name, as serde spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            DeadLetterKind::PoisonHandoff => "poison_handoff",
            DeadLetterKind::RetriesExhausted => "retries_exhausted",
        }
    }
}

/// Who the event is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// `ingest` or `delivery`; an envelope stored before entries had a
    /// kind reads as `ingest`.
    #[serde(default)]
    pub kind: EntryKind,
    /// The destination whose delivery failed (kind `delivery`).
    #[serde(default)]
    pub destination: Option<String>,
    /// The event id, when the message decoded.
    pub event_id: Option<String>,
    /// The idempotency key, when the message decoded.
    pub idempotency_key: Option<String>,
    /// The source, when the message decoded.
    pub source: Option<String>,
    /// The queue the message failed on.
    pub queue: String,
    /// The message id on that queue.
    pub queue_message_id: String,
}

/// When things happened (unix ms).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timing {
    /// When the message was first enqueued.
    pub enqueued_at_ms: UnixMillis,
    /// The relay's receive time, when known.
    pub received_at_ms: Option<UnixMillis>,
    /// The first recorded failed attempt.
    pub first_attempt_at_ms: Option<UnixMillis>,
    /// The last recorded failed attempt.
    pub last_attempt_at_ms: Option<UnixMillis>,
    /// When the DLQ worker stored it.
    pub dead_lettered_at_ms: UnixMillis,
}

/// Delivery attempts made before dead-lettering.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryState {
    /// How many attempts were made.
    pub attempts: u32,
    /// Every recorded failed attempt, oldest first.
    pub history: Vec<AttemptRecord>,
}

/// Why it failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureEvidence {
    /// The last error code.
    pub code: ErrorCode,
    /// Its class.
    pub class: FailureClass,
    /// The last error message.
    pub message: String,
    /// A stable hash of the code and normalized message, for grouping.
    pub signature: String,
}

/// How the request arrived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transport {
    /// Request headers, credentials and signatures redacted.
    pub headers: BTreeMap<String, String>,
    /// The provider's delivery id.
    pub delivery_id: Option<String>,
}

/// What was sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Input {
    /// The original `webhooks` message, whole, for replay.
    pub original: Value,
    /// The first 4 KB of the event body (or of the message, if it is not an event).
    pub excerpt: String,
    /// Whether the excerpt is shorter than the body.
    pub excerpt_truncated: bool,
    /// The body's size in bytes.
    pub body_bytes: u64,
    /// Where a claim-checked body is stored (`payloads.event_id`).
    pub body_ref: Option<String>,
    /// The dedupe key: SHA-256 of kind, source, destination and body
    /// ([`delivery::dedupe_hash`]).
    pub content_hash: String,
    /// A delivery whose event's row was not in D1 (swept): `original` is
    /// the delivery message alone, and the body is unknown.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub event_missing: bool,
}

/// The whole dead-letter envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    /// The entry id (`dlq_…`), derived from the queue message id so a
    /// redelivered DLQ message maps to the same entry.
    pub id: String,
    /// How it got here.
    pub kind: DeadLetterKind,
    /// Who it is.
    pub identity: Identity,
    /// When.
    pub timing: Timing,
    /// Attempts.
    pub delivery: DeliveryState,
    /// Why.
    pub failure: FailureEvidence,
    /// How it arrived.
    pub transport: Transport,
    /// What it was.
    pub input: Input,
}

/// What the DLQ worker knows about one DLQ message.
pub struct DeadLetterInput<'a> {
    /// The DLQ message body.
    pub body: &'a Value,
    /// The DLQ message id (Cloudflare keeps the original id when it moves one).
    pub queue_message_id: &'a str,
    /// The DLQ message timestamp (the original enqueue time when moved).
    pub enqueued_at_ms: UnixMillis,
    /// Failed attempts recorded for this event or message, any order.
    pub history: Vec<AttemptRecord>,
    /// The claim-checked body, when the event has one and it was loaded.
    pub stored_body: Option<&'a str>,
    /// The DLQ worker's clock.
    pub now_ms: UnixMillis,
    /// The relay's queue names (`DlqConfig::origin_queues`).
    pub queues: &'a OriginQueues,
}

/// The entry id for a queue message id.
pub fn entry_id(queue_message_id: &str) -> String {
    let digest = Sha256::digest(queue_message_id.as_bytes());
    format!("dlq_{}", &hex::encode(digest)[..24])
}

/// The id under which a hand-off or moved message's failures were
/// recorded: the original queue message id.
pub fn original_message_id<'a>(body: &'a Value, queue_message_id: &'a str) -> &'a str {
    PoisonHandoff::from_dlq_message(body)
        .and(body.get("queue_message_id").and_then(Value::as_str))
        .unwrap_or(queue_message_id)
}

/// The event inside a DLQ message, if it decodes.
pub fn event_of(body: &Value) -> Option<QueuedEvent> {
    match PoisonHandoff::from_dlq_message(body) {
        Some(h) => decode_value(&h.original).ok(),
        None => decode_value(body).ok(),
    }
}

/// Where a dead letter came from: a hand-off with its reason, or an original
/// message Cloudflare moved.
struct Origin {
    kind: DeadLetterKind,
    handoff: Option<PoisonHandoff>,
    original: Value,
    original_id: String,
    enqueued_at_ms: UnixMillis,
    /// The queue a hand-off says its original was consumed from.
    queue: Option<String>,
}

impl Origin {
    /// The queue the message failed on: the one its hand-off names, else
    /// the configured queue of its kind (a moved message says nothing of
    /// its queue; its DLQ batch is the DLQ's).
    fn queue(&self, queues: &OriginQueues, delivery: bool) -> String {
        self.queue
            .clone()
            .unwrap_or_else(|| queues.of(delivery).to_string())
    }
}

fn origin(body: Value, queue_message_id: &str, enqueued_at_ms: UnixMillis) -> Origin {
    let mut handoff = PoisonHandoff::from_dlq_message(&body);
    let (kind, original, original_id, enqueued_at_ms) = match &mut handoff {
        // The hand-off keeps its reason; its original moves out of it. The
        // relay hands over a delivery's sixth failure itself (its attempts
        // counted on its row): its retries ran out, as when Cloudflare moves
        // a message after `max_retries`.
        Some(h) => (
            if h.class != crate::state::error_code::FailureClass::Poison
                && h.attempts >= crate::retry::delivery_attempts::ATTEMPT_BUDGET
            {
                DeadLetterKind::RetriesExhausted
            } else {
                DeadLetterKind::PoisonHandoff
            },
            std::mem::take(&mut h.original),
            h.queue_message_id.clone(),
            h.enqueued_at_ms,
        ),
        None => (
            DeadLetterKind::RetriesExhausted,
            body,
            queue_message_id.to_string(),
            enqueued_at_ms,
        ),
    };
    Origin {
        kind,
        queue: handoff.as_ref().and_then(|h| h.queue.clone()),
        handoff,
        original: redact_original(original),
        original_id,
        enqueued_at_ms,
    }
}

/// The attempt history oldest first, with the hand-off's own attempt added
/// when the hand-off overtook its attempt record (its reason is authoritative).
fn merged_history(
    mut history: Vec<AttemptRecord>,
    handoff: Option<&PoisonHandoff>,
) -> Vec<AttemptRecord> {
    crate::support::small_sort::sort_by_key(&mut history, |a| (a.at_ms, a.attempt));
    if let Some(h) = handoff {
        if !history
            .iter()
            .any(|a| a.attempt == h.attempts && a.code == h.failure.code)
        {
            history.push(AttemptRecord {
                attempt: h.attempts,
                class: h.class,
                code: h.failure.code,
                message: h.failure.message.clone(),
                at_ms: h.failed_at_ms,
                cause: h.failure.cause,
            });
        }
    }
    history
}

/// The failure that ended the message's life, then its root cause.
fn final_failure(handoff: Option<&PoisonHandoff>, history: &[AttemptRecord]) -> Failure {
    let last = match (handoff, history.last()) {
        (Some(h), _) => h.failure.clone(),
        (None, Some(a)) => {
            let mut f = Failure::new(a.code, a.message.clone());
            f.cause = a.cause;
            f
        }
        (None, None) => Failure::new(
            ErrorCode::Unknown,
            "no failed attempt was recorded; Cloudflare moved the message after max_retries",
        ),
    };
    root_cause(history, &last)
}

/// The body text (for the excerpt and the hash), its size and its claim check.
fn body_parts(
    event: Option<&QueuedEvent>,
    original: &Value,
    stored_body: Option<&str>,
) -> (String, u64, Option<String>) {
    match event.map(|e| &e.body) {
        Some(EventBody::Inline { body }) => (body.clone(), body.len() as u64, None),
        Some(EventBody::Stored {
            body_ref,
            body_bytes,
        }) => (
            stored_body.unwrap_or_default().to_string(),
            *body_bytes,
            Some(body_ref.clone()),
        ),
        None => {
            // Not an event: excerpt the body it carries if it has one (so
            // equal payloads dedupe), else the message itself.
            let text = match (original, original.get("body")) {
                (_, Some(Value::String(body))) => body.clone(),
                (Value::String(s), _) => s.clone(),
                (other, _) => other.to_string(),
            };
            let len = text.len() as u64;
            (text, len, None)
        }
    }
}

/// Who the event is. A message that failed to decode may still name
/// itself; keep what it says.
fn identity(event: Option<&QueuedEvent>, origin: &Origin, queues: &OriginQueues) -> Identity {
    let original = &origin.original;
    let hint = |field: &str| {
        original
            .get(field)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    // A message that says it is a delivery but does not read as one is
    // still filed as that destination's failure.
    let delivery =
        hint("kind").as_deref() == Some(crate::deliver::deliveries::message::DELIVERY_KIND);
    Identity {
        kind: if delivery {
            EntryKind::Delivery
        } else {
            EntryKind::Ingest
        },
        destination: hint("destination").filter(|_| delivery),
        event_id: event.map_or_else(|| hint("event_id"), |e| Some(e.event_id.clone())),
        idempotency_key: event.map_or_else(
            || hint("idempotency_key"),
            |e| Some(e.idempotency_key.clone()),
        ),
        source: event.map_or_else(|| hint("source"), |e| Some(e.source.clone())),
        queue: origin.queue(queues, delivery),
        queue_message_id: origin.original_id.clone(),
    }
}

/// Builds the envelope in one step (the DLQ worker stages it through
/// [`Prepared`] so that one D1 read serves a whole batch).
pub fn build(input: DeadLetterInput<'_>) -> Envelope {
    Prepared::new(
        input.body.clone(),
        input.queue_message_id,
        input.enqueued_at_ms,
        input.queues,
    )
    .finish(input.history, input.stored_body, input.now_ms)
}

/// The original message with every `headers` object in it redacted, at any
/// depth: the relay redacts before enqueueing, this covers messages from
/// other producers (a hand-off-like message that does not parse as one
/// still carries its `original.headers`), so no credential reaches the
/// dead-letter store either way.
fn redact_original(mut original: Value) -> Value {
    redact_headers_deep(&mut original, 0);
    original
}

/// How deep `redact_headers_deep` looks; deeper nesting is not a message shape.
const MAX_REDACT_DEPTH: usize = 16;

fn redact_headers_deep(value: &mut Value, depth: usize) {
    if depth > MAX_REDACT_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                if key == "headers" && child.is_object() {
                    let redacted = headers_of_object(child);
                    if let Value::Object(h) = child {
                        for (name, v) in h.iter_mut() {
                            if let Some(clean) = redacted.get(&name.to_ascii_lowercase()) {
                                if v.is_string() {
                                    *v = Value::String(clean.clone());
                                }
                            }
                        }
                    }
                } else {
                    redact_headers_deep(child, depth + 1);
                }
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| redact_headers_deep(v, depth + 1)),
        _ => {}
    }
}

/// The message's string headers, redacted.
fn headers_of(original: &Value) -> BTreeMap<String, String> {
    original
        .get("headers")
        .map(headers_of_object)
        .unwrap_or_default()
}

/// The string values of a headers object, names lower-cased, redacted.
fn headers_of_object(headers: &Value) -> BTreeMap<String, String> {
    let Value::Object(headers) = headers else {
        return BTreeMap::new();
    };
    let strings: BTreeMap<String, String> = headers
        .iter()
        .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
        .collect();
    redact_map(&strings)
}

pub mod delivery;
mod prepared;
pub use delivery::EventRow;
pub use prepared::Prepared;

#[cfg(test)]
mod tests;
