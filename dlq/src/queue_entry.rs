//! The `queue` export for `webhooks-dlq`, written by hand for the same
//! reason as the relay's: to read the platform's `attempts`.

use crate::triage;
use hookrelay_platform::queue_message::read_batch;
use wasm_bindgen::prelude::*;
use worker::{worker_sys, Env};

/// Entry point for batches from `webhooks-dlq`. Never throws: each message
/// is acked once stored, or retried on its own.
#[wasm_bindgen(js_name = queue, wasm_bindgen_futures = ::worker::wasm_bindgen_futures)]
pub async fn queue(
    batch: worker_sys::MessageBatch,
    env: Env,
    _ctx: worker_sys::Context,
) -> Result<JsValue, JsValue> {
    console_error_panic_hook::set_once();
    triage::triage(read_batch(&batch), &env).await;
    Ok(JsValue::UNDEFINED)
}
