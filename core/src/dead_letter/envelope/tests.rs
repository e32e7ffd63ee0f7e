//! The dead-letter envelope: its parts from a hand-off or a moved message, redaction and the excerpt.

use super::delivery::dedupe_hash;
use super::*;
use crate::state::error_code::Failure;
use crate::state::EntryKind;
use crate::support::redact::REDACTED;
use serde_json::json;

fn event(body: &str) -> Value {
    json!({
        "v": 1, "event_id": "evt_a", "idempotency_key": "demo:msg_1", "source": "demo",
        "delivery_id": "msg_1", "received_at_ms": 900,
        "headers": {"content-type": "application/json", "webhook-signature": "v1,abc", "authorization": "Bearer x", "cookie": "a=b"},
        "body": body
    })
}

fn record(attempt: u32, code: ErrorCode, at_ms: i64) -> AttemptRecord {
    AttemptRecord {
        attempt,
        class: code.class(),
        code,
        message: format!("attempt {attempt} failed"),
        at_ms,
        cause: None,
    }
}

fn input<'a>(body: &'a Value, history: Vec<AttemptRecord>) -> DeadLetterInput<'a> {
    DeadLetterInput {
        body,
        queue_message_id: "m-1",
        enqueued_at_ms: 1000,
        history,
        stored_body: None,
        now_ms: 9000,
        queues: default_queues(),
    }
}

/// Today's queue names, for a test that does not vary them.
pub(super) fn default_queues() -> &'static OriginQueues {
    Box::leak(Box::new(OriginQueues::default()))
}

#[test]
fn an_exhausted_message_takes_its_evidence_from_the_last_recorded_attempt() {
    let body = event("{\"type\":\"ping\"}");
    let history = (1..=6)
        .rev()
        .map(|n| record(n, ErrorCode::D1Unavailable, 1000 + i64::from(n)))
        .collect();
    let env = build(input(&body, history));
    assert_eq!(env.kind, DeadLetterKind::RetriesExhausted);
    assert_eq!(env.id, entry_id("m-1"));
    assert_eq!(env.identity.event_id.as_deref(), Some("evt_a"));
    assert_eq!(env.identity.idempotency_key.as_deref(), Some("demo:msg_1"));
    assert_eq!(env.identity.queue_message_id, "m-1");
    assert_eq!(env.delivery.attempts, 6);
    assert_eq!(
        env.delivery.history.first().map(|a| a.attempt),
        Some(1),
        "oldest first"
    );
    assert_eq!(
        (env.failure.code, env.failure.class),
        (ErrorCode::D1Unavailable, FailureClass::Transient)
    );
    assert_eq!(env.failure.message, "attempt 6 failed");
    assert_eq!(env.timing.first_attempt_at_ms, Some(1001));
    assert_eq!(env.timing.last_attempt_at_ms, Some(1006));
    assert_eq!(env.timing.received_at_ms, Some(900));
    assert_eq!(env.timing.dead_lettered_at_ms, 9000);
    let mut expected = body.clone();
    for name in ["webhook-signature", "authorization", "cookie"] {
        expected["headers"][name] = json!(REDACTED);
    }
    assert_eq!(
        env.input.original, expected,
        "the original is kept whole, credentials aside"
    );
    assert_eq!(env.transport.delivery_id.as_deref(), Some("msg_1"));
}

#[test]
fn an_exhausted_message_without_history_is_unknown() {
    let body = event("{}");
    let env = build(input(&body, vec![]));
    assert_eq!(
        (env.failure.code, env.failure.class),
        (ErrorCode::Unknown, FailureClass::Unknown)
    );
    assert_eq!(env.delivery.attempts, 0);
}

#[test]
fn a_poison_handoff_carries_its_own_reason_and_the_original_message() {
    let original = json!("garbage");
    let handoff = PoisonHandoff::new(
        Failure::new(
            ErrorCode::BadPayload,
            "message is a JSON string, not an object",
        ),
        1,
        "m-0".into(),
        500,
        600,
        original.clone(),
    );
    let body = serde_json::to_value(&handoff).unwrap();
    let env = build(input(&body, vec![]));
    assert_eq!(env.kind, DeadLetterKind::PoisonHandoff);
    assert_eq!(
        env.identity.queue_message_id, "m-0",
        "the original message id, not the hand-off's"
    );
    assert_eq!(env.id, entry_id("m-0"));
    assert_eq!(env.identity.event_id, None);
    assert_eq!(
        (env.failure.code, env.failure.class),
        (ErrorCode::BadPayload, FailureClass::Poison)
    );
    assert_eq!(env.delivery.attempts, 1);
    assert_eq!(
        env.delivery.history.len(),
        1,
        "the hand-off's attempt is added when its record is missing"
    );
    assert_eq!(env.timing.enqueued_at_ms, 500);
    assert_eq!(env.input.original, original);
    assert_eq!(env.input.excerpt, "garbage");

    let recorded = vec![AttemptRecord {
        attempt: 1,
        class: FailureClass::Poison,
        code: ErrorCode::BadPayload,
        message: "x".into(),
        at_ms: 600,
        cause: None,
    }];
    assert_eq!(
        build(input(&body, recorded)).delivery.history.len(),
        1,
        "not added twice"
    );
}

#[test]
fn credentials_and_signatures_are_redacted_in_the_transport_context() {
    let body = event("{}");
    let env = build(input(&body, vec![]));
    for name in ["webhook-signature", "authorization", "cookie"] {
        assert_eq!(env.transport.headers[name], REDACTED, "{name}");
    }
    assert_eq!(env.transport.headers["content-type"], "application/json");
    assert_eq!(
        env.input.original["headers"]["authorization"], REDACTED,
        "the kept original too"
    );
    assert!(!serde_json::to_string(&env).unwrap().contains("Bearer x"));
}

#[test]
fn a_message_that_is_not_an_event_has_its_headers_redacted_too() {
    let mut original = event("not json {");
    original["v"] = json!(99);
    let env = build(input(&original, vec![]));
    assert_eq!(env.transport.headers["authorization"], REDACTED);
    assert!(!serde_json::to_string(&env).unwrap().contains("Bearer x"));
}

#[test]
fn the_excerpt_is_bounded_to_4_kb_and_the_original_kept_whole() {
    let long = format!("{{\"pad\":\"{}\"}}", "é".repeat(5000));
    let body = event(&long);
    let env = build(input(&body, vec![]));
    assert!(env.input.excerpt.len() <= EXCERPT_BYTES);
    assert!(env.input.excerpt_truncated);
    assert_eq!(env.input.body_bytes, long.len() as u64);
    assert_eq!(env.input.original["body"], long);
}

#[test]
fn a_claim_checked_event_excerpts_its_stored_body() {
    let mut body = event("{}");
    let obj = body.as_object_mut().unwrap();
    obj.remove("body");
    obj.insert("body_ref".into(), json!("evt_a"));
    obj.insert("body_bytes".into(), json!(300_000));
    let stored = "{\"big\":true}";
    let env = build(DeadLetterInput {
        stored_body: Some(stored),
        ..input(&body, vec![])
    });
    assert_eq!(env.input.body_ref.as_deref(), Some("evt_a"));
    assert_eq!(env.input.body_bytes, 300_000);
    assert_eq!(env.input.excerpt, stored);
    assert_eq!(
        env.input.content_hash,
        dedupe_hash(
            EntryKind::Ingest,
            "demo",
            None,
            Some("demo:msg_1"),
            stored.as_bytes()
        )
    );
}

#[test]
fn the_dedupe_hash_joins_one_event_and_keeps_two_same_body_events_apart() {
    let a = build(input(&event("{\"n\":1}"), vec![]));
    let b = build(DeadLetterInput {
        queue_message_id: "m-2",
        ..input(&event("{\"n\":1}"), vec![])
    });
    let c = build(input(&event("{\"n\":2}"), vec![]));
    let mut other = event("{\"n\":1}");
    other["event_id"] = json!("evt_b");
    other["idempotency_key"] = json!("demo:msg_2");
    let d = build(DeadLetterInput {
        queue_message_id: "m-3",
        ..input(&other, vec![])
    });
    assert_eq!(
        a.input.content_hash, b.input.content_hash,
        "the same event again joins its entry"
    );
    assert_ne!(a.id, b.id);
    assert_ne!(a.input.content_hash, c.input.content_hash);
    assert_ne!(
        a.input.content_hash, d.input.content_hash,
        "another event with the same body is an entry of its own"
    );
}

#[test]
fn error_signatures_group_messages_that_differ_only_in_variable_parts() {
    let same = [
        (
            "downstream answered 503 after 1200 ms",
            "downstream answered 500 after 87 ms",
        ),
        ("D1: no such table: events", "D1:  no such table:   events"),
        (
            "event evt_1NG8Du2eZvKYlo2C rejected",
            "event evt_9zzzz rejected",
        ),
        (
            "request 8f14e45f-ceea-467a-9af0-e1f8f8a1c3c9 timed out",
            "request 1679091c-5a88-4faf-afb5-e6087eb1b2dc timed out",
        ),
        ("value 'abc' refused", "value 'xyz' refused"),
    ];
    for (a, b) in same {
        assert_eq!(
            error_signature(ErrorCode::Upstream5xx, a),
            error_signature(ErrorCode::Upstream5xx, b),
            "{a} / {b}"
        );
    }
    assert_ne!(
        error_signature(ErrorCode::Upstream5xx, "boom"),
        error_signature(ErrorCode::Timeout, "boom"),
        "the code is part of the signature"
    );
    assert_ne!(
        error_signature(ErrorCode::Unknown, "no such table"),
        error_signature(ErrorCode::Unknown, "disk full")
    );
    let sig = error_signature(ErrorCode::Unknown, "x");
    assert!(sig.starts_with("sig_") && sig.len() == 20);
    assert_eq!(
        sig,
        error_signature(ErrorCode::Unknown, "x"),
        "stable across calls"
    );
}

#[test]
fn a_malformed_handoff_has_its_nested_headers_redacted_too() {
    let body = json!({
        "kind": "poison_handoff",
        "original": {"headers": {"Authorization": "Bearer nested-secret-token"}},
    });
    let env = build(input(&body, vec![]));
    assert_eq!(
        env.kind,
        DeadLetterKind::RetriesExhausted,
        "it does not parse as a hand-off"
    );
    let text = serde_json::to_string(&env).unwrap();
    assert!(!text.contains("nested-secret-token"), "{text}");
}

#[test]
fn a_prepared_message_names_what_to_read_before_the_read() {
    let handoff = PoisonHandoff::new(
        Failure::new(ErrorCode::Upstream4xx, "downstream answered 400"),
        2,
        "m-orig".into(),
        500,
        600,
        event("{\"a\":1}"),
    );
    let body = serde_json::to_value(&handoff).unwrap();
    let mut stored = event("{}");
    let obj = stored.as_object_mut().unwrap();
    obj.remove("body");
    obj.insert("body_ref".into(), json!("evt_a"));
    obj.insert("body_bytes".into(), json!(300_000));
    // (message, original id, entry id, claim check, hash known before the read)
    let table = [
        (&body, "m-orig", None, true),
        (&stored, "m-1", Some("evt_a"), false),
    ];
    for (message, original_id, body_ref, hash_known) in table {
        let p = Prepared::new(message.clone(), "m-1", 1000, default_queues());
        assert_eq!(p.original_message_id(), original_id);
        assert_eq!(p.entry_id(), entry_id(original_id));
        assert_eq!(p.event_id(), Some("evt_a"));
        assert_eq!(p.body_ref(), body_ref);
        assert_eq!(p.inline_content_hash().is_some(), hash_known);
        let hash = p.content_hash(Some("{\"big\":true}"));
        let staged = p.finish(vec![], Some("{\"big\":true}"), 9000);
        let whole = build(DeadLetterInput {
            stored_body: Some("{\"big\":true}"),
            ..input(message, vec![])
        });
        assert_eq!(staged, whole, "staging changes nothing");
        assert_eq!(hash, whole.input.content_hash);
    }
}

#[test]
fn the_envelope_names_the_queue_the_message_failed_on() {
    let staging = OriginQueues {
        webhooks: "webhooks-staging".into(),
        deliveries: "deliveries-staging".into(),
    };
    let moved = event("{}");
    let handoff = |queue: Option<&str>| {
        let h = PoisonHandoff::new(
            Failure::new(ErrorCode::BadPayload, "bad"),
            1,
            "m-0".into(),
            10,
            20,
            event("{}"),
        );
        let h = match queue {
            Some(q) => h.from_queue(q),
            None => h,
        };
        serde_json::to_value(h).unwrap()
    };
    let cases: &[(Value, &OriginQueues, &str)] = &[
        // Moved by Cloudflare: the configured queue of its kind.
        (moved.clone(), default_queues(), "webhooks"),
        (moved, &staging, "webhooks-staging"),
        // A hand-off says where its original was consumed.
        (handoff(Some("webhooks-eu")), &staging, "webhooks-eu"),
        // An older hand-off, without a queue: the configured one.
        (handoff(None), &staging, "webhooks-staging"),
        (handoff(None), default_queues(), "webhooks"),
    ];
    for (body, queues, want) in cases {
        let env = build(DeadLetterInput {
            queues,
            ..input(body, vec![])
        });
        assert_eq!(env.identity.queue, *want, "{body}");
    }
}
