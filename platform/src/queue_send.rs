//! Sending JSON messages to a queue.
//!
//! Messages are serialized with serde_json and parsed into a plain JS object
//! here, rather than through serde-wasm-bindgen, because the latter turns
//! maps into JS `Map`s, which the queue's JSON content type stores as `{}`.
//! The send options are set as plain properties too: worker's `send_raw`
//! builds them with serde-wasm-bindgen, which would be its only use in the
//! relay.

use crate::outlined::outlined;
use wasm_bindgen::{JsCast, JsValue};
use worker::wasm_bindgen_futures::JsFuture;
use worker::{worker_sys, Queue};

/// Parses JSON text into a JS value for sending.
fn to_js(json: &str) -> worker::Result<JsValue> {
    js_sys::JSON::parse(json).map_err(worker::Error::from)
}

/// `{contentType: "json", delaySeconds?}`, plus `body` when given (the
/// shape of one entry of a `sendBatch`).
fn options(body: Option<&JsValue>, delay_s: Option<u32>) -> worker::Result<JsValue> {
    let o = js_sys::Object::new();
    let set = |k: &str, v: &JsValue| js_sys::Reflect::set(&o, &JsValue::from_str(k), v);
    if let Some(b) = body {
        set("body", b)?;
    }
    set("contentType", &JsValue::from_str("json"))?;
    if let Some(d) = delay_s {
        set("delaySeconds", &JsValue::from_f64(f64::from(d)))?;
    }
    Ok(o.into())
}

fn sys(queue: &Queue) -> &worker_sys::Queue {
    queue.as_ref().unchecked_ref()
}

async fn send(queue: &Queue, json: &str, delay_s: Option<u32>) -> worker::Result<()> {
    let promise = sys(queue).send(to_js(json)?, options(None, delay_s)?)?;
    JsFuture::from(promise).await?;
    Ok(())
}

/// Sends one message given as JSON text.
pub async fn send_json(queue: &Queue, json: &str) -> worker::Result<()> {
    outlined(send(queue, json, None)).await
}

/// Sends several messages given as JSON text in one call.
pub async fn send_json_batch(queue: &Queue, jsons: &[String]) -> worker::Result<()> {
    let messages = jsons
        .iter()
        .map(|j| options(Some(&to_js(j)?), None))
        .collect::<worker::Result<js_sys::Array>>()?;
    let promise = sys(queue).send_batch(messages, JsValue::UNDEFINED)?;
    JsFuture::from(promise).await?;
    Ok(())
}

/// Sends one message given as JSON text, delivered after `delay_s` seconds
/// (the pacing of long work: drains, jobs).
pub async fn send_json_after(queue: &Queue, json: &str, delay_s: u32) -> worker::Result<()> {
    outlined(send(queue, json, Some(delay_s))).await
}
