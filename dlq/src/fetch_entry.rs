//! The `fetch` and `scheduled` exports, written by hand like `queue` (see
//! `hookrelay_platform::fetch_answer` for why). An unexpected error is the admin
//! API's 503, so the client retries.

use crate::{route, routes::ApiError};
use hookrelay_core::metrics::Component;
use hookrelay_platform::fetch_answer::respond;
use wasm_bindgen::prelude::*;
use worker::{worker_sys, Context, Env, Request};

/// Entry point for HTTP requests (the admin API).
#[wasm_bindgen(js_name = fetch, wasm_bindgen_futures = ::worker::wasm_bindgen_futures)]
pub async fn fetch(
    req: worker_sys::web_sys::Request,
    env: Env,
    ctx: worker_sys::Context,
) -> Result<JsValue, JsValue> {
    console_error_panic_hook::set_once();
    let routed = route(Request::from(req), env, Context::new(ctx))
        .await
        .map(Into::into);
    respond(routed, Component::Admin, |message| {
        ApiError::Unavailable(format!("the DLQ worker failed: {message}")).into_response()
    })
}

/// Entry point for the cron trigger.
#[wasm_bindgen(js_name = scheduled, wasm_bindgen_futures = ::worker::wasm_bindgen_futures)]
pub async fn scheduled(
    _event: worker_sys::ScheduledEvent,
    env: Env,
    _ctx: worker_sys::ScheduleContext,
) -> Result<JsValue, JsValue> {
    console_error_panic_hook::set_once();
    crate::resume(&env).await;
    Ok(JsValue::UNDEFINED)
}
