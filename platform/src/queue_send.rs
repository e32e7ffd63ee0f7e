//! Sending JSON messages to a queue.
//!
//! Messages are serialized with serde_json and handed to JS as text, where
//! a small snippet parses them into plain objects and sends them with the
//! JSON content type: serde-wasm-bindgen would turn maps into JS `Map`s,
//! which that content type stores as `{}`, and building the body and the
//! options object from wasm costs a crossing per property (measured on the
//! ingest path, bench target 4, where one send per request is the rule).

use crate::outlined::outlined;
use js_sys::Promise;
use wasm_bindgen::prelude::*;
use worker::wasm_bindgen_futures::JsFuture;
use worker::{Env, Queue};

#[wasm_bindgen(inline_js = r#"
const JSON_TYPE = { contentType: "json" };
export function send_text(queue, text, delay) {
  return queue.send(JSON.parse(text), delay === undefined ? JSON_TYPE : { contentType: "json", delaySeconds: delay });
}
export function send_text_to(env, binding, text) {
  const queue = env[binding];
  if (queue === undefined) throw new Error(`Binding \`${binding}\` is undefined.`);
  return queue.send(JSON.parse(text), JSON_TYPE);
}
export function send_texts(queue, texts) {
  return queue.sendBatch(texts.map((t) => ({ body: JSON.parse(t), contentType: "json" })));
}
"#)]
extern "C" {
    #[wasm_bindgen(catch)]
    fn send_text(queue: &JsValue, text: &str, delay: Option<u32>) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch)]
    fn send_text_to(env: &Env, binding: &str, text: &str) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch)]
    fn send_texts(queue: &JsValue, texts: Vec<String>) -> Result<Promise, JsValue>;
}

async fn send(queue: &Queue, json: &str, delay_s: Option<u32>) -> worker::Result<()> {
    JsFuture::from(send_text(queue.as_ref(), json, delay_s)?).await?;
    Ok(())
}

/// Starts sending one message given as JSON text to the queue bound as
/// `binding`: the send's promise, for a caller that continues it without a
/// future (the ingest path). Looks the binding up without worker's type
/// check, which reads the binding's constructor name on every call.
pub fn start_json(env: &Env, binding: &str, json: &str) -> worker::Result<Promise> {
    Ok(send_text_to(env, binding, json)?)
}

/// Sends several messages given as JSON text in one call.
pub async fn send_json_batch(queue: &Queue, jsons: &[String]) -> worker::Result<()> {
    JsFuture::from(send_texts(queue.as_ref(), jsons.to_vec())?).await?;
    Ok(())
}

/// Sends one message given as JSON text, delivered after `delay_s` seconds
/// (the pacing of long work: drains, jobs).
pub async fn send_json_after(queue: &Queue, json: &str, delay_s: u32) -> worker::Result<()> {
    outlined(send(queue, json, Some(delay_s))).await
}
