//! The message format on the `webhooks` queue, and its decoder.
//!
//! The decoder is the consumer's first line of defence: anything a producer
//! can put on the queue (including something that is not hookrelay's) comes
//! through here and leaves as a typed event or a classified poison failure.
//! Its error messages name fields, never values, so no payload reaches a log.

use crate::state::error_code::{ErrorCode, Failure};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The current message version.
pub const MESSAGE_VERSION: u64 = 1;

/// Where the body of an event lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EventBody {
    /// The raw body travels in the message.
    Inline {
        /// The raw request body (UTF-8 JSON text, byte-exact).
        body: String,
    },
    /// The body was too large for a message and is stored in D1's `payloads`
    /// table under the event id.
    Stored {
        /// The `payloads` row key.
        body_ref: String,
        /// The body's size in bytes.
        body_bytes: u64,
    },
}

/// One accepted webhook, as enqueued by the relay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueuedEvent {
    /// Message format version.
    pub v: u64,
    /// Stable event id, derived from the idempotency key.
    pub event_id: String,
    /// `{source}:{delivery id}` or `{source}:sha256:{hex}`.
    pub idempotency_key: String,
    /// The configured source name.
    pub source: String,
    /// The provider's delivery id, if it sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_id: Option<String>,
    /// When the relay accepted the request (unix ms).
    pub received_at_ms: i64,
    /// Request headers, credentials and signatures redacted.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The body, inline or by reference.
    #[serde(flatten)]
    pub body: EventBody,
}

impl QueuedEvent {
    /// The inline body text, if the body travels in the message.
    pub fn inline_body(&self) -> Option<&str> {
        match &self.body {
            EventBody::Inline { body } => Some(body),
            EventBody::Stored { .. } => None,
        }
    }
}

/// Decodes a message body given as JSON text (the platform glue stringifies
/// whatever the queue delivered).
pub fn decode(json: &str) -> Result<QueuedEvent, Failure> {
    let value: Value = serde_json::from_str(json).map_err(|e| {
        Failure::new(
            ErrorCode::BadPayload,
            format!(
                "message is not JSON (line {}, column {})",
                e.line(),
                e.column()
            ),
        )
    })?;
    decode_value(&value)
}

/// Decodes an already parsed message body.
pub fn decode_value(value: &Value) -> Result<QueuedEvent, Failure> {
    let Value::Object(map) = value else {
        return Err(Failure::new(
            ErrorCode::BadPayload,
            format!("message is a JSON {}, not an object", kind(value)),
        ));
    };
    let v = map
        .get("v")
        .and_then(Value::as_u64)
        .ok_or_else(|| schema("v", "a version number"))?;
    if v != MESSAGE_VERSION {
        return Err(Failure::new(
            ErrorCode::SchemaMismatch,
            format!("message version {v} is not supported (expected {MESSAGE_VERSION})"),
        ));
    }
    let event_id = string(map, "event_id")?;
    let idempotency_key = string(map, "idempotency_key")?;
    let source = string(map, "source")?;
    if !idempotency_key.starts_with(&format!("{source}:")) {
        return Err(Failure::new(
            ErrorCode::SchemaMismatch,
            "field idempotency_key does not start with the event's source",
        ));
    }
    let delivery_id = match map.get("delivery_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(schema("delivery_id", "a string")),
    };
    let received_at_ms = map
        .get("received_at_ms")
        .and_then(Value::as_i64)
        .ok_or_else(|| schema("received_at_ms", "an integer"))?;
    let headers = headers_of(map)?;
    Ok(QueuedEvent {
        v,
        event_id,
        idempotency_key,
        source,
        delivery_id,
        received_at_ms,
        body: body_of(map, &headers)?,
        headers,
    })
}

fn headers_of(map: &serde_json::Map<String, Value>) -> Result<BTreeMap<String, String>, Failure> {
    match map.get("headers") {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(h)) => {
            // Inserted one by one: `collect` into a map sorts first, and
            // that sort is a few KB of wasm for this one type.
            let mut headers = BTreeMap::new();
            for (k, v) in h {
                let v = v
                    .as_str()
                    .ok_or_else(|| schema("headers", "an object of strings"))?;
                headers.insert(k.clone(), v.to_string());
            }
            Ok(headers)
        }
        Some(_) => Err(schema("headers", "an object of strings")),
    }
}

/// The body, inline or claim-checked; exactly one of the two. An inline
/// body is what the front door accepts: a form when the event's
/// `content-type` says so, JSON otherwise.
fn body_of(
    map: &serde_json::Map<String, Value>,
    headers: &BTreeMap<String, String>,
) -> Result<EventBody, Failure> {
    let body = match (map.get("body"), map.get("body_ref")) {
        (Some(Value::String(body)), None) => {
            if crate::support::form::is_form(headers.get("content-type").map(String::as_str)) {
                if let Err(e) = crate::support::form::decode(body.as_bytes()) {
                    return Err(Failure::new(
                        ErrorCode::BadPayload,
                        format!("event body is not a form: {}", e.0),
                    ));
                }
            } else if serde_json::from_str::<serde::de::IgnoredAny>(body).is_err() {
                return Err(Failure::new(
                    ErrorCode::BadPayload,
                    "event body is not valid JSON",
                ));
            }
            EventBody::Inline { body: body.clone() }
        }
        (None, Some(Value::String(body_ref))) => EventBody::Stored {
            body_ref: body_ref.clone(),
            body_bytes: map
                .get("body_bytes")
                .and_then(Value::as_u64)
                .ok_or_else(|| schema("body_bytes", "an integer"))?,
        },
        (Some(_), Some(_)) => {
            return Err(Failure::new(
                ErrorCode::SchemaMismatch,
                "message has both body and body_ref; expected exactly one",
            ))
        }
        _ => return Err(schema("body", "a string (or body_ref, a string)")),
    };
    Ok(body)
}

/// The event id a message claims, even when it does not decode as a whole,
/// so a failed attempt can still be found by event id.
pub fn event_id_hint(json: &str) -> Option<String> {
    let value: Value = serde_json::from_str(json).ok()?;
    value.get("event_id")?.as_str().map(str::to_string)
}

fn string(map: &Map<String, Value>, field: &str) -> Result<String, Failure> {
    match map.get(field) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        _ => Err(schema(field, "a non-empty string")),
    }
}

fn schema(field: &str, expected: &str) -> Failure {
    Failure::new(
        ErrorCode::SchemaMismatch,
        format!("field {field} is missing or not {expected}"),
    )
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn good() -> Value {
        json!({
            "v": 1, "event_id": "evt_1", "idempotency_key": "s:1", "source": "s",
            "received_at_ms": 1_700_000_000_000i64, "headers": {"content-type": "application/json"},
            "body": "{\"type\":\"ping\"}"
        })
    }

    #[test]
    fn an_encoded_event_decodes_back_to_itself() {
        let event = decode_value(&good()).unwrap();
        let text = serde_json::to_string(&event).unwrap();
        assert_eq!(decode(&text).unwrap(), event);
        assert_eq!(event.inline_body(), Some("{\"type\":\"ping\"}"));

        let stored = QueuedEvent {
            body: EventBody::Stored {
                body_ref: "evt_1".into(),
                body_bytes: 300_000,
            },
            ..event
        };
        let text = serde_json::to_string(&stored).unwrap();
        assert_eq!(decode(&text).unwrap(), stored);
    }

    #[test]
    fn undecodable_messages_are_bad_payloads() {
        for text in ["garbage", "\"a string\"", "[1,2]", "42", "null", "{\"v\":1"] {
            let f = decode(text).unwrap_err();
            assert_eq!(f.code, ErrorCode::BadPayload, "{text}");
        }
    }

    #[test]
    fn messages_of_the_wrong_shape_are_schema_mismatches_naming_the_field() {
        let table: [(&str, Value, &str); 8] = [
            ("v", json!(2), "version 2"),
            ("v", Value::Null, "field v"),
            ("event_id", Value::Null, "field event_id"),
            ("event_id", json!(""), "field event_id"),
            ("source", json!(7), "field source"),
            ("idempotency_key", json!("other:1"), "idempotency_key"),
            ("received_at_ms", json!("yesterday"), "field received_at_ms"),
            ("headers", json!({"a": 1}), "field headers"),
        ];
        for (field, value, mention) in table {
            let mut msg = good();
            if value.is_null() {
                msg.as_object_mut().unwrap().remove(field);
            } else {
                msg[field] = value;
            }
            let f = decode_value(&msg).unwrap_err();
            assert_eq!(f.code, ErrorCode::SchemaMismatch, "{field}");
            assert!(f.message.contains(mention), "{field}: {}", f.message);
        }
    }

    #[test]
    fn an_inline_body_that_is_not_json_is_a_bad_payload_and_is_not_echoed() {
        let mut msg = good();
        msg["body"] = json!("card=4242424242424242");
        let f = decode_value(&msg).unwrap_err();
        assert_eq!(f.code, ErrorCode::BadPayload);
        assert!(!f.message.contains("4242"));
    }

    #[test]
    fn an_inline_form_body_is_accepted_when_its_content_type_says_form() {
        let mut msg = good();
        msg["body"] = json!("text=hi+there&payload=%7B%7D");
        msg["headers"] = json!({"content-type": "application/x-www-form-urlencoded"});
        let event = decode_value(&msg).unwrap();
        assert_eq!(event.inline_body(), Some("text=hi+there&payload=%7B%7D"));
        msg["body"] = json!("text=%zz");
        let f = decode_value(&msg).unwrap_err();
        assert_eq!(f.code, ErrorCode::BadPayload);
    }

    #[test]
    fn a_message_that_fails_to_decode_still_yields_the_event_id_it_claims() {
        let mut msg = good();
        msg["body"] = json!("not json");
        assert_eq!(event_id_hint(&msg.to_string()).as_deref(), Some("evt_1"));
        assert_eq!(event_id_hint("garbage"), None);
        assert_eq!(event_id_hint("{\"event_id\": 7}"), None);
    }

    #[test]
    fn a_message_needs_exactly_one_of_body_and_body_ref() {
        let mut both = good();
        both["body_ref"] = json!("evt_1");
        assert_eq!(
            decode_value(&both).unwrap_err().code,
            ErrorCode::SchemaMismatch
        );
        let mut neither = good();
        neither.as_object_mut().unwrap().remove("body");
        assert_eq!(
            decode_value(&neither).unwrap_err().code,
            ErrorCode::SchemaMismatch
        );
    }
}
