//! The dead-letter envelope on arbitrary DLQ messages: `envelope::build`,
//! `error_signature` and `normalize_message` never panic, the excerpt stays
//! within `EXCERPT_BYTES`, and no `authorization` header value survives
//! into the stored envelope.
#![no_main]

use hookrelay_core::dead_letter::envelope::{
    build, error_signature, normalize_message, DeadLetterInput, DeadLetterKind, Envelope,
    EXCERPT_BYTES,
};
use hookrelay_core::state::error_code::ErrorCode;
use hookrelay_core::support::redact::{is_sensitive, REDACTED};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn envelope_of(body: &Value) -> Envelope {
    build(DeadLetterInput {
        body,
        queue_message_id: "m",
        enqueued_at_ms: 0,
        history: vec![],
        stored_body: None,
        now_ms: 1,
    })
}

/// A string as it appears inside serialized JSON (escaped, no quotes).
fn json_fragment(s: &str) -> String {
    let quoted = Value::String(s.to_string()).to_string();
    quoted[1..quoted.len() - 1].to_string()
}

/// The `authorization` headers of a message object, as (name, value), with
/// the name in any case (the envelope lower-cases header names).
fn authorizations(message: &Value) -> Vec<(String, String)> {
    let Some(Value::Object(headers)) = message.get("headers") else {
        return Vec::new();
    };
    headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("authorization"))
        .filter_map(|(name, value)| Some((name.clone(), value.as_str()?.to_string())))
        .collect()
}

/// A copy of `message` whose header `name` is `replacement`.
fn with_header(message: &Value, name: &str, replacement: &str) -> Value {
    let mut copy = message.clone();
    if let Some(Value::Object(h)) = copy.get_mut("headers") {
        h.insert(name.to_string(), Value::String(replacement.to_string()));
    }
    copy
}

/// Checks that the `authorization` values of `message` (the DLQ message, or
/// the original a hand-off carries) do not reach the serialized envelope.
///
/// Only values that cannot legitimately be there are checked: longer than 8
/// characters, found nowhere else in the input, and not part of the
/// envelope built with the value already replaced by `[REDACTED]` (which
/// rules out fixed texts and hashes the envelope contains anyway).
fn assert_authorization_redacted(input: &Value, message: &Value, serialized: &str) {
    for (name, secret) in authorizations(message) {
        if secret == REDACTED || secret.chars().count() <= 8 {
            continue;
        }
        let needle = json_fragment(&secret);
        // Replace this header in the whole input, then look for the value
        // in what is left (other fields, keys, other headers...).
        let scrubbed_message = with_header(message, &name, REDACTED);
        let scrubbed_input = if std::ptr::eq(input, message) {
            scrubbed_message
        } else {
            let mut copy = input.clone();
            if let Some(original) = copy.get_mut("original") {
                *original = scrubbed_message;
            }
            copy
        };
        if scrubbed_input.to_string().contains(&needle) {
            continue;
        }
        let baseline = serde_json::to_string(&envelope_of(&scrubbed_input))
            .expect("an envelope always serializes");
        if baseline.contains(&needle) {
            continue;
        }
        assert!(
            !serialized.contains(&needle),
            "the {name:?} header value leaked into the envelope"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);

    // Error grouping works on any message text.
    for code in [ErrorCode::Unknown, ErrorCode::BadPayload] {
        let sig = error_signature(code, &text);
        assert!(sig.len() == 20 && sig.starts_with("sig_"), "{sig}");
        assert!(sig[4..].bytes().all(|b| b.is_ascii_hexdigit()), "{sig}");
    }
    let normalized = normalize_message(&text);
    assert!(normalized.len() <= 2 * text.len() + 1);

    let Ok(input) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let envelope = envelope_of(&input);

    let excerpt = &envelope.input.excerpt;
    assert!(
        excerpt.len() <= EXCERPT_BYTES,
        "excerpt is {} bytes",
        excerpt.len()
    );
    if envelope.input.excerpt_truncated {
        // `truncate` backs off at most three bytes to a char boundary.
        assert!(excerpt.len() + 3 >= EXCERPT_BYTES, "cut too short");
    }
    for (name, value) in &envelope.transport.headers {
        if is_sensitive(name) {
            assert_eq!(value, REDACTED, "header {name:?} kept its value");
        }
    }

    let serialized = serde_json::to_string(&envelope).expect("an envelope always serializes");
    assert_authorization_redacted(&input, &input, &serialized);
    // A hand-off stores the original it carries; its headers are redacted too.
    if envelope.kind == DeadLetterKind::PoisonHandoff {
        if let Some(original) = input.get("original") {
            assert_authorization_redacted(&input, original, &serialized);
        }
    }
});
