//! What both workers' hand-written `fetch` exports share: turning the
//! router's result into the value handed back to the runtime.
//!
//! Written by hand instead of `#[event(fetch)]` because the macro's glue
//! formats a handler's error with `worker::Error`'s `Display` and unwraps
//! with its `Debug`, which links a formatter for every variant (I/O,
//! router, KV, …) into the wasm.

use crate::db::error_message;
use crate::log;
use hookrelay_core::metrics::Component;
use wasm_bindgen::JsValue;
use worker::{worker_sys::web_sys, Response};

/// The response to hand back: the router's, or for an error the one
/// `on_error` builds from its message (logged at ERROR as `request_failed`).
pub fn respond(
    routed: worker::Result<web_sys::Response>,
    component: Component,
    on_error: impl FnOnce(&str) -> worker::Result<Response>,
) -> Result<JsValue, JsValue> {
    let response = routed.or_else(|e| {
        let message = error_message(&e);
        log::error(component, "request_failed", log::fields! {"err": message});
        on_error(&message).map(web_sys::Response::from)
    });
    response
        .map(Into::into)
        .map_err(|e| JsValue::from_str(&error_message(&e)))
}
