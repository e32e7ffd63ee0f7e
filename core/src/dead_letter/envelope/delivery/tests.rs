//! A delivery's dead letter: its event read from the row, its destination's attempts, its dedupe key.

use super::super::{build, DeadLetterInput, DeadLetterKind, Envelope, Prepared};
use super::*;
use crate::retry::attempt::AttemptRecord;
use crate::retry::poison_handoff::PoisonHandoff;
use crate::state::error_code::{ErrorCode, Failure};
use crate::support::queue_names::OriginQueues;
use crate::support::redact::REDACTED;
use serde_json::{json, Value};

fn message(destination: &str) -> Value {
    serde_json::to_value(DeliveryMessage::new(
        "evt_a",
        "shop:1",
        "shop",
        destination,
        900,
    ))
    .unwrap()
}

fn row(body: &str) -> EventRow {
    EventRow {
        delivery_id: Some("1".into()),
        received_at_ms: 900,
        headers: BTreeMap::from([
            ("content-type".into(), "application/json".into()),
            ("authorization".into(), "Bearer secret".into()),
        ]),
        body: Some(body.into()),
        body_bytes: body.len() as u64,
        ..EventRow::default()
    }
}

fn attempt(n: u32) -> AttemptRecord {
    AttemptRecord {
        attempt: n,
        class: ErrorCode::Upstream5xx.class(),
        code: ErrorCode::Upstream5xx,
        message: format!("billing answered 500 ({n})"),
        at_ms: 1000 + i64::from(n),
        cause: None,
    }
}

fn delivery_envelope(body: Value, row: Option<EventRow>, history: Vec<AttemptRecord>) -> Envelope {
    let mut p = Prepared::new(body, "m-d", 950, &OriginQueues::default());
    assert_eq!(
        p.inline_content_hash(),
        None,
        "a delivery's key needs its event"
    );
    p.attach_event(row);
    p.finish(history, None, 9000)
}

#[test]
fn a_moved_delivery_message_is_a_delivery_entry_holding_its_event_whole() {
    let env = delivery_envelope(
        message("billing"),
        Some(row("{\"total\":5}")),
        vec![attempt(2), attempt(1)],
    );
    assert_eq!(env.kind, DeadLetterKind::RetriesExhausted);
    assert_eq!(env.identity.kind, EntryKind::Delivery);
    assert_eq!(env.identity.destination.as_deref(), Some("billing"));
    assert_eq!(env.identity.queue, "deliveries");
    assert_eq!(env.identity.event_id.as_deref(), Some("evt_a"));
    assert_eq!(env.delivery.attempts, 2);
    assert_eq!(env.failure.code, ErrorCode::Upstream5xx);
    assert_eq!(env.input.excerpt, "{\"total\":5}");
    assert!(!env.input.event_missing);
    let original = crate::receive::queued_event::decode_value(&env.input.original).unwrap();
    assert_eq!(original.event_id, "evt_a");
    assert_eq!(original.inline_body(), Some("{\"total\":5}"));
    assert_eq!(original.headers["authorization"], REDACTED);
    assert_eq!(env.transport.headers["authorization"], REDACTED);
    assert_eq!(env.transport.delivery_id.as_deref(), Some("1"));
    assert_eq!(env.closes_delivery(), Some(("evt_a", "billing")));
    assert_eq!(
        env.fails_event(),
        None,
        "the event is summed up from its deliveries"
    );
}

#[test]
fn a_handoff_of_a_delivery_message_is_a_delivery_entry_with_its_reason() {
    let handoff = PoisonHandoff::new(
        Failure::new(ErrorCode::Upstream4xx, "billing answered 400"),
        1,
        "m-orig".into(),
        10,
        20,
        message("billing"),
    );
    let mut p = Prepared::new(
        serde_json::to_value(handoff).unwrap(),
        "m-dlq",
        30,
        &OriginQueues::default(),
    );
    assert_eq!(p.delivery_key(), Some(("evt_a", "billing")));
    assert_eq!(p.original_message_id(), "m-orig");
    p.attach_event(Some(row("{}")));
    let env = p.finish(vec![], None, 40);
    assert_eq!(env.kind, DeadLetterKind::PoisonHandoff);
    assert_eq!(env.identity.kind, EntryKind::Delivery);
    assert_eq!(env.failure.code, ErrorCode::Upstream4xx);
    assert_eq!(env.delivery.history.len(), 1, "the hand-off's own attempt");
}

#[test]
fn the_key_separates_destinations_and_kinds_and_joins_equal_deliveries() {
    let a = delivery_envelope(message("billing"), Some(row("{}")), vec![]);
    let b = delivery_envelope(message("analytics"), Some(row("{}")), vec![]);
    let again = delivery_envelope(message("billing"), Some(row("{}")), vec![]);
    assert_ne!(
        a.input.content_hash, b.input.content_hash,
        "two destinations, two entries"
    );
    assert_eq!(a.input.content_hash, again.input.content_hash);
    let ingest = dedupe_hash(EntryKind::Ingest, "shop", None, Some("shop:1"), b"{}");
    assert_ne!(
        a.input.content_hash, ingest,
        "a delivery never dedupes an ingest"
    );
    assert_eq!(
        a.input.content_hash,
        dedupe_hash(
            EntryKind::Delivery,
            "shop",
            Some("billing"),
            Some("shop:1"),
            b"{}"
        ),
        "the key holds the event's idempotency key"
    );
    // Each part ends with a zero byte, so no part runs into the next.
    let table = [
        (("shop", Some("b"), Some("k")), ("shop", None, Some("bk"))),
        (("shop", Some("b"), Some("k")), ("shopb", None, Some("k"))),
        (("shop", None, Some("k")), ("shop", None, None)),
    ];
    for ((s1, d1, k1), (s2, d2, k2)) in table {
        assert_ne!(
            dedupe_hash(EntryKind::Delivery, s1, d1, k1, b"x"),
            dedupe_hash(EntryKind::Delivery, s2, d2, k2, b"x"),
            "{s1} {d1:?} {k1:?}"
        );
    }
}

#[test]
fn two_events_with_the_same_body_make_two_entries_of_either_kind() {
    let mut other = message("billing");
    other["event_id"] = json!("evt_b");
    other["idempotency_key"] = json!("shop:2");
    let a = delivery_envelope(message("billing"), Some(row("{}")), vec![]);
    let b = delivery_envelope(other, Some(row("{}")), vec![]);
    assert_ne!(a.input.content_hash, b.input.content_hash);
    let stamp = |key| dedupe_hash(EntryKind::Ingest, "shop", None, Some(key), b"{}");
    assert_ne!(stamp("shop:1"), stamp("shop:2"));
    // An entry stored before this rule kept the old key (source and body):
    // a new one never joins it.
    let before = crate::receive::idempotency::content_hash("shop", b"{}");
    assert_ne!(stamp("shop:1"), before);
}

#[test]
fn a_claim_checked_event_excerpts_the_body_read_with_its_row() {
    let big = "x".repeat(5000);
    let stored = EventRow {
        body: None,
        body_ref: Some("evt_a".into()),
        body_bytes: 5000,
        stored_body: Some(big.clone()),
        ..row("")
    };
    let env = delivery_envelope(message("billing"), Some(stored), vec![]);
    assert_eq!(env.input.body_ref.as_deref(), Some("evt_a"));
    assert_eq!(env.input.body_bytes, 5000);
    assert!(env.input.excerpt_truncated && env.input.excerpt.len() == 4096);
    assert_eq!(env.input.original["body_ref"], "evt_a");
}

#[test]
fn a_delivery_whose_event_row_is_gone_keeps_what_it_can_and_says_so() {
    let env = delivery_envelope(message("billing"), None, vec![attempt(1)]);
    assert!(env.input.event_missing);
    assert_eq!(env.identity.kind, EntryKind::Delivery);
    assert_eq!(env.identity.destination.as_deref(), Some("billing"));
    assert_eq!(env.identity.idempotency_key.as_deref(), Some("shop:1"));
    assert_eq!(env.timing.received_at_ms, Some(900));
    assert_eq!(
        env.input.original,
        message("billing"),
        "the message itself is kept"
    );
    assert_eq!(env.delivery.attempts, 1);
}

#[test]
fn an_ingest_message_and_an_old_envelope_are_of_kind_ingest() {
    let event = json!({"v": 1, "event_id": "e", "idempotency_key": "s:1", "source": "s",
        "received_at_ms": 1, "headers": {}, "body": "{}"});
    let env = build(DeadLetterInput {
        body: &event,
        queue_message_id: "m",
        enqueued_at_ms: 1,
        history: vec![],
        stored_body: None,
        now_ms: 2,
        queues: &OriginQueues::default(),
    });
    assert_eq!(
        (env.identity.kind, env.identity.destination.clone()),
        (EntryKind::Ingest, None)
    );
    assert_eq!(env.fails_event(), Some("e"));
    let mut old = serde_json::to_value(&env).unwrap();
    let identity = old["identity"].as_object_mut().unwrap();
    identity.remove("kind");
    identity.remove("destination");
    let read: Envelope = serde_json::from_value(old).unwrap();
    assert_eq!(read.identity.kind, EntryKind::Ingest);
    assert!(!serde_json::to_value(&env).unwrap()["input"]
        .as_object()
        .unwrap()
        .contains_key("event_missing"));
}

#[test]
fn a_malformed_delivery_message_is_still_filed_under_its_destination() {
    let bad = json!({"v": 1, "kind": "delivery", "event_id": "evt_a", "destination": "billing"});
    let p = Prepared::new(bad, "m", 1, &OriginQueues::default());
    assert_eq!(p.delivery_key(), None);
    let env = p.finish(vec![], None, 2);
    assert_eq!(env.identity.kind, EntryKind::Delivery);
    assert_eq!(env.identity.destination.as_deref(), Some("billing"));
    assert_eq!(env.identity.queue, "deliveries");
}

#[test]
fn a_delivery_names_the_configured_deliveries_queue_or_its_handoffs() {
    let staging = OriginQueues {
        webhooks: "webhooks-staging".into(),
        deliveries: "deliveries-staging".into(),
    };
    let p = Prepared::new(message("billing"), "m-d", 950, &staging);
    assert_eq!(
        p.finish(vec![], None, 1).identity.queue,
        "deliveries-staging"
    );
    let handoff = PoisonHandoff::new(
        Failure::new(ErrorCode::BadPayload, "bad"),
        1,
        "m-d".into(),
        10,
        20,
        message("billing"),
    )
    .from_queue("deliveries-eu");
    let p = Prepared::new(serde_json::to_value(handoff).unwrap(), "m", 1, &staging);
    assert_eq!(p.finish(vec![], None, 1).identity.queue, "deliveries-eu");
}
