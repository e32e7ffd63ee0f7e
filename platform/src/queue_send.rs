//! Sending JSON messages to a queue.
//!
//! Every hookrelay queue message is one JSON document, serialized by
//! serde_json and sent as it is, as **text** (`contentType: "text"`).
//! Sending it as a JSON object would make JS parse the text only for the
//! runtime to serialize it again: on the ingest path (bench target 4, one
//! send per request) that round trip was about 2% of the workerd CPU of an
//! accepted webhook (`node bench/ab-relay.mjs`, concurrent rounds). The
//! reader takes either form (`queue_message`), so messages sent as JSON
//! objects, by an older relay or by hand, are still read.

use crate::outlined::outlined;
use hookrelay_core::support::queue_batch::send_chunks;
use js_sys::Promise;
use wasm_bindgen::prelude::*;
use worker::wasm_bindgen_futures::JsFuture;
use worker::{Env, Queue};

#[wasm_bindgen(inline_js = r#"
const TEXT = { contentType: "text" };
export function send_text(queue, text, delay) {
  return queue.send(text, delay === undefined ? TEXT : { contentType: "text", delaySeconds: delay });
}
export function send_text_to(env, binding, text) {
  const queue = env[binding];
  if (queue === undefined) throw new Error(`Binding \`${binding}\` is undefined.`);
  return queue.send(text, TEXT);
}
export function send_texts(queue, texts, ends, delays) {
  const messages = texts.map((body, i) => (delays && delays[i] ? { body, contentType: "text", delaySeconds: delays[i] } : { body, contentType: "text" }));
  return Promise.all(Array.from(ends, (end, i) => queue.sendBatch(messages.slice(i ? ends[i - 1] : 0, end))));
}
"#)]
extern "C" {
    #[wasm_bindgen(catch)]
    fn send_text(queue: &JsValue, text: &str, delay: Option<u32>) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch)]
    fn send_text_to(env: &Env, binding: &str, text: &str) -> Result<Promise, JsValue>;
    #[wasm_bindgen(catch)]
    fn send_texts(
        queue: &JsValue,
        texts: Vec<String>,
        ends: Vec<u32>,
        delays: Option<Vec<u32>>,
    ) -> Result<Promise, JsValue>;
}

async fn send(queue: &Queue, json: &str, delay_s: Option<u32>) -> worker::Result<()> {
    JsFuture::from(send_text(queue.as_ref(), json, delay_s)?).await?;
    Ok(())
}

/// Starts sending one message given as JSON text to the queue bound as
/// `binding`: the send's promise. Looks the binding up without worker's
/// type check, which reads the binding's constructor name on every call.
/// (The ingest's common path sends from `src/entry.js`, the same way.)
pub fn start_json(env: &Env, binding: &str, json: &str) -> worker::Result<Promise> {
    Ok(send_text_to(env, binding, json)?)
}

/// Sends several messages given as JSON text, in as few `sendBatch` calls
/// as the queue's per-call limits allow (`hookrelay_core::support::queue_batch`),
/// all started at once. An error means some may have gone and some not:
/// every caller's retry resends them all, and each message is idempotent.
pub async fn send_json_batch(queue: &Queue, jsons: &[String]) -> worker::Result<()> {
    let sizes: Vec<usize> = jsons.iter().map(String::len).collect();
    let ends: Vec<u32> = send_chunks(&sizes).iter().map(|c| c.end as u32).collect();
    JsFuture::from(send_texts(queue.as_ref(), jsons.to_vec(), ends, None)?).await?;
    Ok(())
}

/// As [`send_json_batch`], each message delivered after its own delay
/// (seconds; 0: at once).
pub async fn send_json_batch_after(
    queue: &Queue,
    messages: &[(String, u32)],
) -> worker::Result<()> {
    let jsons: Vec<String> = messages.iter().map(|(j, _)| j.clone()).collect();
    let delays: Vec<u32> = messages.iter().map(|(_, d)| *d).collect();
    let sizes: Vec<usize> = jsons.iter().map(String::len).collect();
    let ends: Vec<u32> = send_chunks(&sizes).iter().map(|c| c.end as u32).collect();
    JsFuture::from(send_texts(queue.as_ref(), jsons, ends, Some(delays))?).await?;
    Ok(())
}

/// Sends one message given as JSON text, delivered after `delay_s` seconds
/// (the pacing of long work: drains, jobs).
pub async fn send_json_after(queue: &Queue, json: &str, delay_s: u32) -> worker::Result<()> {
    outlined(send(queue, json, Some(delay_s))).await
}
