//! The `fetch` and `scheduled` exports, written by hand like `queue`
//! (see `queue_entry` and `hookrelay_platform::entry` for why). A request
//! that fails inside the relay is a JSON 500 that names what failed.

use crate::route;
use wasm_bindgen::prelude::*;
use worker::{worker_sys, Env, ScheduleContext, ScheduledEvent};

/// Entry point for HTTP requests: the response, or a promise of it. Not
/// an `async fn`, so the ingest path pays for no future (see `route`).
#[wasm_bindgen(js_name = fetch)]
pub fn fetch(
    req: worker_sys::web_sys::Request,
    env: Env,
    ctx: worker_sys::Context,
) -> Result<JsValue, JsValue> {
    console_error_panic_hook::set_once();
    route(req, env, ctx)
}

/// Entry point for the cron trigger.
#[wasm_bindgen(js_name = scheduled, wasm_bindgen_futures = ::worker::wasm_bindgen_futures)]
pub async fn scheduled(
    event: worker_sys::ScheduledEvent,
    env: Env,
    ctx: worker_sys::ScheduleContext,
) -> Result<JsValue, JsValue> {
    console_error_panic_hook::set_once();
    crate::scheduled(ScheduledEvent::from(event), env, ScheduleContext::from(ctx)).await;
    Ok(JsValue::UNDEFINED)
}
