//! The ingest path's request and response, on the raw `web_sys` objects.
//!
//! `worker::Request::from` reads the request's `cf` object on every
//! request, and `worker::Response` builds a `Headers`, copies its body into
//! a fresh `Uint8Array` and then a `Response`. Measured with the V8
//! profiler on the relay's ingest path, those were among the largest costs
//! outside the worker's own logic, for data the ingest never uses. So the
//! hot path reads only what it needs from the raw request and answers with
//! a string body and one headers object built once per isolate.

use js_sys::{Array, Uint8Array};
use wasm_bindgen::JsCast;
use worker::wasm_bindgen_futures::JsFuture;
use worker::web_sys::{Headers, Request, Response, ResponseInit};

/// The URL's path, as the runtime serialized it (percent-encoded, no query
/// or fragment): the same text `worker::Request::path` gives.
pub fn path(req: &Request) -> String {
    path_of(&req.url()).to_string()
}

fn path_of(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(url, |i| &url[i + 3..]);
    // The authority ends at the first '/', '?' or '#'; only a '/' starts a path.
    let Some(start) = after_scheme.find(['/', '?', '#']) else {
        return "/";
    };
    let path = &after_scheme[start..];
    if !path.starts_with('/') {
        return "/";
    }
    &path[..path.find(['?', '#']).unwrap_or(path.len())]
}

/// Every header as (lower-case name, value), in the runtime's order.
pub fn header_list(req: &Request) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Ok(Some(entries)) = js_sys::try_iter(&req.headers().entries()) else {
        return out;
    };
    for entry in entries.flatten() {
        let pair: Array = entry.unchecked_into();
        if let (Some(k), Some(v)) = (pair.get(0).as_string(), pair.get(1).as_string()) {
            out.push((k, v));
        }
    }
    out
}

/// The whole body.
pub async fn bytes(req: &Request) -> worker::Result<Vec<u8>> {
    let buffer = JsFuture::from(req.array_buffer()?).await?;
    Ok(Uint8Array::new(&buffer).to_vec())
}

thread_local! {
    static JSON_HEADERS: Option<Headers> = Headers::new().ok().inspect(|h| {
        let _ = h.set("content-type", "application/json");
    });
}

/// A JSON response from text that already is JSON. The runtime copies the
/// init's headers into each response, so the one headers object is shared.
pub fn json_text(status: u16, json: &str) -> worker::Result<Response> {
    let init = ResponseInit::new();
    init.set_status(status);
    JSON_HEADERS.with(|h| {
        if let Some(h) = h {
            init.set_headers(h.as_ref());
        }
    });
    Response::new_with_opt_str_and_init(Some(json), &init).map_err(worker::Error::from)
}

#[cfg(test)]
mod tests {
    use super::path_of;

    #[test]
    fn the_path_is_what_lies_between_the_authority_and_the_query() {
        let table = [
            ("http://127.0.0.1:8787/webhooks/demo?x=1", "/webhooks/demo"),
            ("https://relay.example/healthz#top", "/healthz"),
            ("https://relay.example", "/"),
            ("https://relay.example/a%20b/", "/a%20b/"),
            ("https://relay.example/?q=/x", "/"),
            ("https://relay.example?q=/x", "/"),
            ("https://relay.example#/webhooks/x", "/"),
        ];
        for (url, path) in table {
            assert_eq!(path_of(url), path, "{url}");
        }
    }
}
