//! The `webhooks` queue decoder on arbitrary messages: `decode`,
//! `decode_value` and `event_id_hint` never panic, and whatever decodes
//! survives a serde_json round trip unchanged.
#![no_main]

use hookrelay_core::receive::queued_event::{decode, decode_value, event_id_hint, QueuedEvent};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn assert_round_trips(event: &QueuedEvent) {
    let text = serde_json::to_string(event).expect("a QueuedEvent always serializes");
    let again = decode(&text).expect("a re-encoded event decodes");
    assert_eq!(&again, event, "text round trip");

    let value = serde_json::to_value(event).expect("a QueuedEvent always serializes");
    let again = decode_value(&value).expect("a re-encoded event decodes as a value");
    assert_eq!(&again, event, "value round trip");
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);

    let decoded = decode(&text);
    let hint = event_id_hint(&text);
    if let Ok(event) = &decoded {
        assert_round_trips(event);
        // A message that decodes names its own event id.
        assert_eq!(hint.as_deref(), Some(event.event_id.as_str()));
        let _ = event.inline_body();
    }
    if let Err(failure) = &decoded {
        let _ = failure.to_string();
    }

    // Anything that parses as JSON, straight from the bytes.
    if let Ok(value) = serde_json::from_slice::<Value>(data) {
        let by_value = decode_value(&value);
        if let Ok(event) = &by_value {
            assert_round_trips(event);
        }
        // Valid UTF-8 JSON: the lossy text is the same text, so `decode`
        // must have reached the same verdict.
        if std::str::from_utf8(data).is_ok() {
            assert_eq!(by_value, decoded, "decode and decode_value disagree");
        }
    }
});
