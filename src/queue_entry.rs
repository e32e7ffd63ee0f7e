//! The `queue` export, written by hand instead of `#[event(queue)]` so the
//! consumer can read the platform's `attempts` (see
//! `hookrelay_platform::deliveries`). worker-build's shim calls any export
//! named `queue` with the raw batch, the env and the context.

use crate::consumer;
use crate::delivery_consumer;
use crate::parking::drain_consumer;
use hookrelay_platform::parking::drain_resume::resume_if_due;
use hookrelay_platform::queue_message::read_batch;
use wasm_bindgen::prelude::*;
use worker::{worker_sys, Env};

/// The queue of drain steps (`wrangler.toml`, producer binding `CONTROL`).
pub const CONTROL_QUEUE: &str = "hookrelay-control";

/// The queue of deliveries, one message per (event, destination)
/// (`wrangler.toml`, producer binding `DELIVERIES`).
pub const DELIVERIES_QUEUE: &str = "deliveries";

/// Entry point for batches from `webhooks`, `deliveries` and `hookrelay-control`,
/// dispatched by the batch's queue name. It never throws: each message is
/// acked or retried on its own, so a failure never turns into a batch-wide
/// retry.
#[wasm_bindgen(js_name = queue, wasm_bindgen_futures = ::worker::wasm_bindgen_futures)]
pub async fn queue(
    batch: worker_sys::MessageBatch,
    env: Env,
    _ctx: worker_sys::Context,
) -> Result<JsValue, JsValue> {
    console_error_panic_hook::set_once();
    let name: String = batch.queue().map(String::from).unwrap_or_default();
    // A queue that is not the control queue is `webhooks` (or a renamed one).
    if name == CONTROL_QUEUE {
        drain_consumer::consume(read_batch(&batch), &env).await;
    } else if name == DELIVERIES_QUEUE {
        delivery_consumer::consume(read_batch(&batch), &env).await;
    } else {
        consumer::consume(read_batch(&batch), &env).await;
    }
    // Lost drain chains (a restart dropped the local queues) are resent.
    resume_if_due(&env).await;
    Ok(JsValue::UNDEFINED)
}
