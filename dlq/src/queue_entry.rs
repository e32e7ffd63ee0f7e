//! The `queue` export, written by hand for the same reason as the relay's:
//! to read the platform's `attempts`. It serves two queues: `webhooks-dlq`
//! (triage) and `hookrelay-jobs` (one step of a job per message).

use crate::{job_queue, triage};
use hookrelay_platform::queue_message::read_batch;
use wasm_bindgen::prelude::*;
use worker::{worker_sys, Env};

/// The queue of job steps.
pub const JOBS_QUEUE: &str = "hookrelay-jobs";

/// Entry point for every batch. Never throws: each message is acked once
/// handled, or retried on its own.
#[wasm_bindgen(js_name = queue, wasm_bindgen_futures = ::worker::wasm_bindgen_futures)]
pub async fn queue(
    batch: worker_sys::MessageBatch,
    env: Env,
    _ctx: worker_sys::Context,
) -> Result<JsValue, JsValue> {
    console_error_panic_hook::set_once();
    let name: String = batch.queue().map(String::from).unwrap_or_default();
    let messages = read_batch(&batch);
    if name == JOBS_QUEUE {
        job_queue::consume(messages, &env).await;
    } else {
        triage::triage(messages, &env).await;
    }
    Ok(JsValue::UNDEFINED)
}
