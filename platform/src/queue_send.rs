//! Sending JSON messages to a queue.
//!
//! Messages are serialized with serde_json and parsed into a plain JS object
//! here, rather than through serde-wasm-bindgen, because the latter turns
//! maps into JS `Map`s, which the queue's JSON content type stores as `{}`.

use crate::outlined::outlined;
use wasm_bindgen::JsValue;
use worker::{Queue, QueueContentType, RawMessageBuilder, SendMessage};

/// Parses JSON text into a JS value for sending.
fn to_js(json: &str) -> worker::Result<JsValue> {
    js_sys::JSON::parse(json).map_err(worker::Error::from)
}

fn message(json: &str) -> worker::Result<SendMessage<JsValue>> {
    Ok(RawMessageBuilder::new(to_js(json)?).build_with_content_type(QueueContentType::Json))
}

/// Sends one message given as JSON text.
pub async fn send_json(queue: &Queue, json: &str) -> worker::Result<()> {
    outlined(queue.send_raw(message(json)?)).await
}

/// Sends several messages given as JSON text in one call.
pub async fn send_json_batch(queue: &Queue, jsons: &[String]) -> worker::Result<()> {
    let messages = jsons
        .iter()
        .map(|j| message(j))
        .collect::<worker::Result<Vec<_>>>()?;
    queue.send_raw_batch(messages).await
}

/// Sends one message given as JSON text, delivered after `delay_s` seconds
/// (the pacing of long work: drains, jobs).
pub async fn send_json_after(queue: &Queue, json: &str, delay_s: u32) -> worker::Result<()> {
    let message = RawMessageBuilder::new(to_js(json)?)
        .delay_seconds(delay_s)
        .build_with_content_type(QueueContentType::Json);
    outlined(queue.send_raw(message)).await
}
