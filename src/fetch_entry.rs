//! The `fetch` and `scheduled` exports, written by hand like `queue`
//! (see `queue_entry` and `hookrelay_platform::fetch_answer` for why), and the
//! ingest's two later steps, which the module entry (`src/entry.js`) calls
//! once the body, then the send, has settled. A request that fails inside
//! the relay is a JSON 500 that names what failed.

use crate::{route, routes::ingest};
use wasm_bindgen::prelude::*;
use worker::{worker_sys, Env, ScheduleContext, ScheduledEvent};

/// Entry point for HTTP requests: the response, or a promise of it; for a
/// webhook that passed the precheck, the go-ahead string of
/// `ingest_route::begin` instead (the entry then reads the body and calls
/// [`ingest_body`]). Not an `async fn`, so the ingest path pays for no
/// future (see `route`).
#[wasm_bindgen(js_name = fetch)]
pub fn fetch(
    req: worker_sys::web_sys::Request,
    env: Env,
    ctx: worker_sys::Context,
) -> Result<JsValue, JsValue> {
    console_error_panic_hook::set_once();
    route(req, env, ctx)
}

/// The ingest's second step: the request's head and body (a `Uint8Array`;
/// `undefined` when reading it failed, with `failure`). See
/// `ingest_route::body_read`.
#[wasm_bindgen(js_name = ingestBody)]
pub fn ingest_body(
    env: Env,
    ctx: JsValue,
    source: String,
    head: String,
    body: Option<js_sys::Uint8Array>,
    failure: JsValue,
) -> Result<JsValue, JsValue> {
    ingest::body_read(env, ctx, &source, &head, body, failure)
}

/// The ingest's last step: the queue's answer (its refusal, when not
/// `undefined`). See `ingest_route::sent`.
#[wasm_bindgen(js_name = ingestSent)]
pub fn ingest_sent(
    env: Env,
    ctx: JsValue,
    source: String,
    event_id: String,
    failure: JsValue,
) -> Result<JsValue, JsValue> {
    ingest::sent(env, ctx, &source, &event_id, failure)
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
