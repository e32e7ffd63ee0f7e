//! The `fetch` and `scheduled` exports, written by hand like `queue`
//! instead of `#[event(...)]`: the macro's glue formats a handler's error
//! with `worker::Error`'s `Display` and unwraps with its `Debug`, which
//! links every variant's formatter into the wasm. Here an unexpected error
//! is the admin API's 503 (the client retries), worded by
//! `hookrelay_platform::db::error_message`.

use crate::{admin::ApiError, route};
use hookrelay_core::metrics::Component;
use hookrelay_platform::db::error_message;
use hookrelay_platform::log;
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
    let response = match route(Request::from(req), env, Context::new(ctx)).await {
        Ok(r) => Ok(r),
        Err(e) => {
            let message = error_message(&e);
            log::error(
                Component::Admin,
                "request_failed",
                log::fields! {"err": message},
            );
            ApiError::Unavailable(format!("the DLQ worker failed: {message}")).into_response()
        }
    };
    let response = response.map_err(|e| JsValue::from_str(&error_message(&e)))?;
    Ok(worker_sys::web_sys::Response::from(response).into())
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
