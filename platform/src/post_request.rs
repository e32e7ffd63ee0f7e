//! Outbound POST requests, built on `web_sys::RequestInit` directly.
//!
//! worker's `Request::new_with_init` converts its `RequestInit` through the
//! Cloudflare `cf` properties serializer, which links ~12 KB of wasm into
//! each worker even though hookrelay never sets a `cf` property. The request
//! built here is the one that conversion builds without `cf`.

use wasm_bindgen::JsValue;
use worker::web_sys::{self, RequestRedirect};
use worker::{Error, Headers, Request, Result};

/// A POST of `body` to `url` with `headers`.
pub fn post(url: &str, headers: &Headers, body: &str) -> Result<Request> {
    post_within(url, headers, body, None)
}

/// [`post`], aborted after `timeout_ms` when one is given (the caller's
/// own budget: an answer it cannot wait for is no answer).
pub fn post_within(
    url: &str,
    headers: &Headers,
    body: &str,
    timeout_ms: Option<u64>,
) -> Result<Request> {
    let init = web_sys::RequestInit::new();
    if let Some(ms) = timeout_ms {
        init.set_signal(Some(&web_sys::AbortSignal::timeout_with_f64(ms as f64)));
    }
    init.set_method("POST");
    init.set_headers(headers.as_ref());
    init.set_body(&JsValue::from_str(body));
    // Never followed (DESIGN §3): no signed call goes anywhere but `url`.
    init.set_redirect(RequestRedirect::Manual);
    web_sys::Request::new_with_str_and_init(url, &init)
        .map(Request::from)
        .map_err(|e| {
            // The error `Request::new_with_init` answers.
            Error::JsError(
                e.as_string()
                    .unwrap_or_else(|| "invalid URL or options for Request".to_string()),
            )
        })
}
