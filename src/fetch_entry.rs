//! The `fetch` and `scheduled` exports, written by hand like `queue`
//! (see `queue_entry`) instead of `#[event(...)]`: the macro's glue formats
//! a handler's error with `worker::Error`'s `Display` and unwraps with its
//! `Debug`, which links every variant's formatter (I/O errors, router
//! errors, …) into the wasm. Here an error becomes a JSON 500 that names
//! what failed, worded by `hookrelay_platform::db::error_message`.

use crate::{responses, route};
use hookrelay_core::metrics::Component;
use hookrelay_platform::db::error_message;
use hookrelay_platform::log;
use wasm_bindgen::prelude::*;
use worker::{worker_sys, Context, Env, Request, ScheduleContext, ScheduledEvent};

/// Entry point for HTTP requests.
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
                Component::Relay,
                "request_failed",
                log::fields! {"err": message},
            );
            responses::internal(&message)
        }
    };
    let response = response.map_err(|e| JsValue::from_str(&error_message(&e)))?;
    Ok(worker_sys::web_sys::Response::from(response).into())
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
