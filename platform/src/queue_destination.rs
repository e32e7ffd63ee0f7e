//! A queue destination's delivery (`hookrelay_core::deliver::queue_destination`):
//! its large body's send time recorded in D1 and the body put to the R2
//! archive first (by every send, so the object is kept for the hold after
//! its last one), then one message sent to the user's queue as a JSON
//! object (their consumer reads `message.body` as an object). Any of them
//! failing is a transient failure, as a 5xx is: the delivery retries on
//! its own schedule and counts against the breaker.

use crate::db::{destination_bodies, error_message};
use crate::{archive_bucket, now_ms};
use hookrelay_core::deliver::queue_destination::{queue_message, QueueMessage};
use hookrelay_core::receive::queued_event::QueuedEvent;
use hookrelay_core::state::error_code::{ErrorCode, Failure};
use js_sys::Promise;
use wasm_bindgen::prelude::*;
use worker::wasm_bindgen_futures::JsFuture;
use worker::Env;

#[wasm_bindgen(inline_js = r#"
export function send_object_to(env, binding, text) {
  const queue = env[binding];
  if (queue === undefined) throw new Error(`the queue binding ${binding} is missing`);
  return queue.send(JSON.parse(text), { contentType: "json" });
}
"#)]
extern "C" {
    #[wasm_bindgen(catch)]
    fn send_object_to(env: &Env, binding: &str, text: &str) -> Result<Promise, JsValue>;
}

/// Sends `event` (with `body`) to destination `name`'s queue `binding`.
pub async fn send(
    env: &Env,
    event: &QueuedEvent,
    body: &str,
    (name, binding): (&str, &str),
) -> Result<(), Failure> {
    let json = match queue_message(event, name, body) {
        QueueMessage::Inline(json) => json,
        QueueMessage::Stored { json, key } => {
            // Recorded before the put: an object is never newer than the
            // record its deletion waits on.
            let recorded = match env.d1("DB") {
                Ok(db) => destination_bodies::record_send(&db, &event.event_id, now_ms()).await,
                Err(e) => Err(e),
            };
            if let Err(e) = recorded {
                return Err(failed(
                    name,
                    &format!(
                        "its body's send time could not be recorded in D1 ({})",
                        error_message(&e)
                    ),
                ));
            }
            let content_type = event
                .headers
                .get("content-type")
                .map_or("application/json", String::as_str);
            if let Err(e) = archive_bucket::put_body(env, &key, body, content_type).await {
                return Err(failed(
                    name,
                    &format!("its body could not be put to R2 ({})", error_message(&e)),
                ));
            }
            json
        }
    };
    let sent = match send_object_to(env, binding, &json) {
        Ok(p) => JsFuture::from(p).await.map(|_| ()),
        Err(e) => Err(e),
    };
    sent.map_err(|e| {
        failed(
            name,
            &format!(
                "the send to queue binding `{binding}` failed ({})",
                js_text(&e)
            ),
        )
    })
}

fn failed(name: &str, why: &str) -> Failure {
    Failure::new(
        ErrorCode::Upstream5xx,
        format!("queue destination '{name}': {why}; retried like a 5xx"),
    )
}

fn js_text(e: &JsValue) -> String {
    let text = js_sys::Reflect::get(e, &JsValue::from_str("message"))
        .ok()
        .and_then(|m| m.as_string())
        .or_else(|| e.as_string())
        .unwrap_or_else(|| "unknown error".into());
    text.chars().take(200).collect()
}
