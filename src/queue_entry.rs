//! The `queue` export, written by hand instead of `#[event(queue)]` so the
//! consumer can read the platform's `attempts` (see
//! `hookrelay_platform::deliveries`). worker-build's shim calls any export
//! named `queue` with the raw batch, the env and the context.

use crate::consumer;
use hookrelay_platform::queue_message::read_batch;
use wasm_bindgen::prelude::*;
use worker::{worker_sys, Env};

/// Entry point for batches from the `webhooks` queue. It never throws:
/// each message is acked or retried on its own, so a failure never turns
/// into a batch-wide retry.
#[wasm_bindgen(js_name = queue, wasm_bindgen_futures = ::worker::wasm_bindgen_futures)]
pub async fn queue(
    batch: worker_sys::MessageBatch,
    env: Env,
    _ctx: worker_sys::Context,
) -> Result<JsValue, JsValue> {
    console_error_panic_hook::set_once();
    consumer::consume(read_batch(&batch), &env).await;
    Ok(JsValue::UNDEFINED)
}
