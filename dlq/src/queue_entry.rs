//! The `queue` export, written by hand for the same reason as the relay's:
//! to read the platform's `attempts`. It serves two queues, named by
//! `QUEUE_DLQ` (triage; `webhooks-dlq` by default) and `QUEUE_JOBS` (one
//! step of a job per message; `hookrelay-jobs`).

use crate::consumers::{jobs, webhooks_dlq};
use hookrelay_core::metrics::Component;
use hookrelay_core::support::queue_names::{DlqConsumer, DLQ_QUEUES};
use hookrelay_platform::queue_dispatch::consumer_of;
use hookrelay_platform::queue_message::read_batch;
use wasm_bindgen::prelude::*;
use worker::{worker_sys, Env};

/// Entry point for every batch. Never throws: each message is acked once
/// handled, or retried on its own; a batch from a queue no var names is
/// logged and retried.
#[wasm_bindgen(js_name = queue, wasm_bindgen_futures = ::worker::wasm_bindgen_futures)]
pub async fn queue(
    batch: worker_sys::MessageBatch,
    env: Env,
    _ctx: worker_sys::Context,
) -> Result<JsValue, JsValue> {
    console_error_panic_hook::set_once();
    let name: String = batch.queue().map(String::from).unwrap_or_default();
    let messages = read_batch(&batch);
    match consumer_of(&env, DLQ_QUEUES, &name, &messages, Component::Dlq) {
        Some(DlqConsumer::Triage) => webhooks_dlq::triage(messages, &env).await,
        Some(DlqConsumer::Jobs) => jobs::consume(messages, &env).await,
        // Retried and logged by consumer_of.
        None => {}
    }
    Ok(JsValue::UNDEFINED)
}
