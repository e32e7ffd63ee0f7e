//! The ingest path's request and response, on the raw `web_sys` objects.
//!
//! `worker::Request::from` reads the request's `cf` object on every
//! request, and `worker::Response` builds a `Headers`, copies its body into
//! a fresh `Uint8Array` and then a `Response`. Measured with the V8
//! profiler on the relay's ingest path, those were among the largest costs
//! outside the worker's own logic, for data the ingest never uses. So the
//! hot path reads only what it needs from the raw request and answers with
//! a string body and one headers object built once per isolate.

use wasm_bindgen::prelude::*;
use worker::web_sys::{Request, Response};

/// The URL's path, as the runtime serialized it (percent-encoded, no query
/// or fragment): the same text `worker::Request::path` gives.
pub fn path(req: &Request) -> String {
    path_of(&req.url()).to_string()
}

fn path_of(url: &str) -> &str {
    // A byte scan: `str::find` with a `&str` sets up a two-way searcher,
    // which the profile showed on every request.
    let scheme_end = url.as_bytes().windows(3).position(|w| w == b"://");
    let after_scheme = scheme_end.map_or(url, |i| &url[i + 3..]);
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

#[wasm_bindgen(inline_js = r#"
export function precheck_text(req) {
  return req.method + "\n" + (req.headers.get("content-length") ?? "") + "\n" + (req.headers.get("cf-connecting-ip") ?? "");
}
const JSON_HEADERS = new Headers({ "content-type": "application/json" });
export function json_response(status, text) {
  return new Response(text, { status, headers: JSON_HEADERS });
}
"#)]
extern "C" {
    fn precheck_text(req: &Request) -> String;
    #[wasm_bindgen(catch)]
    fn json_response(status: u16, text: &str) -> Result<Response, JsValue>;
}

/// What the ingest checks before reading a body.
pub struct Precheck {
    /// The method.
    pub method: String,
    /// The declared `Content-Length` (`None` when absent or not a number).
    pub content_length: Option<u64>,
    /// `CF-Connecting-IP`, the client's address (`None` when absent).
    pub client_ip: Option<String>,
}

/// Reads the method, the declared length and the client's address, in one call.
pub fn precheck_parts(req: &Request) -> Precheck {
    let text = precheck_text(req);
    let mut parts = text.splitn(3, '\n');
    let method = parts.next().unwrap_or("").to_string();
    let content_length = parts.next().and_then(|l| l.trim().parse().ok());
    let client_ip = parts.next().filter(|ip| !ip.is_empty()).map(String::from);
    Precheck {
        method,
        content_length,
        client_ip,
    }
}

/// The request's head, from its text: the method, the URL, and every
/// header as (lower-case name, value) in the runtime's order.
pub struct Head<'t> {
    /// The method.
    pub method: &'t str,
    /// The URL as received (what `{url}` signs unless the source sets one).
    pub url: &'t str,
    /// The headers.
    pub headers: Vec<(String, String)>,
}

/// Reads the head's text: the method, a line feed, the URL, a line feed,
/// then each name and value followed by a line feed (`src/entry.js` builds
/// it in JS, where walking the headers costs no crossing; from wasm it
/// takes five calls and two strings per header).
pub fn head(text: &str) -> Head<'_> {
    let (method, rest) = text.split_once('\n').unwrap_or((text, ""));
    let (url, rest) = rest.split_once('\n').unwrap_or((rest, ""));
    Head {
        method,
        url,
        headers: pairs(rest),
    }
}

/// The pairs of the head's text. A header value never holds a line feed (the
/// fetch standard refuses CR, LF and NUL in values), so the text splits
/// unambiguously.
fn pairs(text: &str) -> Vec<(String, String)> {
    let mut lines = text.split('\n');
    let mut out = Vec::new();
    while let (Some(k), Some(v)) = (lines.next(), lines.next()) {
        out.push((k.to_string(), v.to_string()));
    }
    out
}

/// A JSON response from text that already is JSON. The runtime copies the
/// init's headers into each response, so one headers object is shared.
pub fn json_text(status: u16, json: &str) -> worker::Result<Response> {
    Ok(json_response(status, json)?)
}

#[cfg(test)]
mod tests {
    use super::{head, pairs, path_of};

    #[test]
    fn the_head_text_is_the_method_the_url_then_the_headers() {
        let h = head("POST\nhttps://r.example/webhooks/a?x=1\ncontent-type\napplication/json\n");
        assert_eq!(
            (h.method, h.url),
            ("POST", "https://r.example/webhooks/a?x=1")
        );
        assert_eq!(
            h.headers,
            vec![("content-type".to_string(), "application/json".to_string())]
        );
    }

    #[test]
    fn header_text_splits_into_its_pairs() {
        let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
        assert_eq!(pairs(""), vec![]);
        assert_eq!(pairs("a\n\n"), vec![pair("a", "")]);
        assert_eq!(
            pairs("x-signature\nab, cd\ncontent-type\napplication/json\n"),
            vec![
                pair("x-signature", "ab, cd"),
                pair("content-type", "application/json")
            ]
        );
    }

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
