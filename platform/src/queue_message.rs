//! Queue messages, read with the platform's `attempts` counter.
//!
//! worker 0.8.7 does not expose `Message::attempts()` (workers-rs issue
//! 1057), so each worker exports its own `queue` entry point taking the raw
//! `MessageBatch`, and this module reads `attempts` from each raw message
//! with `Reflect`. worker-build's shim wires any export named `queue`.

use serde_json::Value;
use wasm_bindgen::JsValue;
use worker::worker_sys;

/// One queue message, read out of the platform object.
pub struct QueueMessage {
    /// The queue message id (kept when Cloudflare moves it to a DLQ).
    pub id: String,
    /// When the message was first sent (unix ms).
    pub enqueued_at_ms: i64,
    /// Which delivery this is, 1-based, as the platform counts.
    pub attempts: u32,
    /// The body as JSON text: a string body as it is (hookrelay sends JSON
    /// text), any other body serialized.
    pub body_json: String,
    raw: worker_sys::Message,
}

impl QueueMessage {
    /// The body parsed as JSON, for hand-offs that carry it whole. A text
    /// body that is not JSON is kept as a string, so a dead letter still
    /// holds what was sent.
    pub fn body_value(&self) -> Value {
        serde_json::from_str(&self.body_json)
            .unwrap_or_else(|_| Value::String(self.body_json.clone()))
    }

    /// Acknowledges the message.
    pub fn ack(&self) {
        if let Err(e) = self.raw.ack() {
            worker::console_error!("ack failed for message {}: {:?}", self.id, e);
        }
    }

    /// Asks for redelivery after `delay_s` seconds.
    pub fn retry(&self, delay_s: u32) {
        let options = js_sys::Object::new();
        let _ = js_sys::Reflect::set(
            &options,
            &"delaySeconds".into(),
            &JsValue::from_f64(f64::from(delay_s)),
        );
        if let Err(e) = self.raw.retry(options.into()) {
            worker::console_error!("retry failed for message {}: {:?}", self.id, e);
        }
    }
}

/// Reads every message of a raw batch.
pub fn read_batch(batch: &worker_sys::MessageBatch) -> Vec<QueueMessage> {
    let Ok(messages) = batch.messages() else {
        return Vec::new();
    };
    messages
        .iter()
        .map(|m| {
            let raw: worker_sys::Message = wasm_bindgen::JsCast::unchecked_into(m);
            read_one(raw)
        })
        .collect()
}

fn read_one(raw: worker_sys::Message) -> QueueMessage {
    let id = raw.id().map(String::from).unwrap_or_default();
    let enqueued_at_ms = raw.timestamp().map(|d| d.get_time() as i64).unwrap_or(0);
    let attempts = js_sys::Reflect::get(&raw, &JsValue::from_str("attempts"))
        .ok()
        .and_then(|v| v.as_f64())
        .map_or(1, |n| n.max(1.0) as u32);
    let body = raw.body().unwrap_or(JsValue::NULL);
    // hookrelay sends its messages as JSON text (`queue_send`); a body sent
    // as a JSON object (an older relay, a message sent by hand) is
    // serialized here. One that JSON cannot express (undefined, a V8-only
    // type) becomes `null`, which the decoder reports as a bad payload.
    let body_json = body.as_string().unwrap_or_else(|| {
        js_sys::JSON::stringify(&body)
            .ok()
            .and_then(|s| s.as_string())
            .unwrap_or_else(|| "null".to_string())
    });
    QueueMessage {
        id,
        enqueued_at_ms,
        attempts,
        body_json,
        raw,
    }
}
