//! The `queue` export, written by hand instead of `#[event(queue)]` so the
//! consumer can read the platform's `attempts` (see
//! `hookrelay_platform::deliveries`). worker-build's shim calls any export
//! named `queue` with the raw batch, the env and the context.

use crate::consumers::control;
use crate::consumers::deliveries;
use crate::consumers::webhooks;
use hookrelay_core::metrics::Component;
use hookrelay_core::support::queue_names::{RelayConsumer, RELAY_QUEUES};
use hookrelay_platform::queue_dispatch::consumer_of;
use hookrelay_platform::queue_message::read_batch;
use wasm_bindgen::prelude::*;
use worker::{worker_sys, Env};

/// Entry point for batches from the queues named by `QUEUE_WEBHOOKS`,
/// `QUEUE_DELIVERIES` and `QUEUE_CONTROL` (`webhooks`, `deliveries`,
/// `hookrelay-control` by default), dispatched by the batch's queue name. It never throws: each message is
/// acked or retried on its own, so a failure never turns into a batch-wide
/// retry; a batch from any other queue is logged and retried.
#[wasm_bindgen(js_name = queue, wasm_bindgen_futures = ::worker::wasm_bindgen_futures)]
pub async fn queue(
    batch: worker_sys::MessageBatch,
    env: Env,
    _ctx: worker_sys::Context,
) -> Result<JsValue, JsValue> {
    console_error_panic_hook::set_once();
    let name: String = batch.queue().map(String::from).unwrap_or_default();
    let messages = read_batch(&batch);
    match consumer_of(&env, RELAY_QUEUES, &name, &messages, Component::Relay) {
        Some(RelayConsumer::Webhooks) => webhooks::consume(messages, &env).await,
        Some(RelayConsumer::Control) => control::consume(messages, &env).await,
        Some(RelayConsumer::Deliveries) => deliveries::consume(messages, &env).await,
        // Retried and logged by consumer_of.
        None => {}
    }
    // Lost drain chains and delivery messages (a restart dropped the local
    // queues), and leases that ran out, are taken up again.
    crate::maintenance::periodic::check_if_due(&env).await;
    Ok(JsValue::UNDEFINED)
}
