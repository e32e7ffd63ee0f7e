//! One signed POST to a downstream, with a timeout, on the platform's
//! `fetch` itself, or on a service binding's (`Via::Service`: another
//! Worker, no public hop; the same request, answer and classification).
//!
//! Not through worker's `Fetch`: per call that builds a `Request`, a second
//! `RequestInit` and a `Response` wrapper (headers, `cf`, websocket reads),
//! and its timeout is a Rust timer (a closure and a `setTimeout`) raced
//! with the call. A batch makes up to 100 calls at once, so here the
//! platform's `AbortSignal.timeout` bounds the call, as a hand-written JS
//! consumer does, and the answer never crosses into wasm beyond its status
//! (and a refusal's `Retry-After`). Its body is then read to its end on the
//! JS side, or cancelled when long (`drain_body`): the runtime counts an
//! unread answer as an open connection, and past its limit stalls the
//! next call until it cancels the oldest one.
//!
//! Redirects are never followed (`redirect: "manual"`, DESIGN §3): a 3xx
//! is answered as it came, a failure naming its `Location`'s host, so no
//! body, signature or credential goes anywhere but the destination's URL,
//! and no answer to a request the relay did not send counts.

use hookrelay_core::deliver::response::{
    classify_answer, drain_body, is_redirect, network_error, reads_retry_after, timed_out,
    AnswerHeaders,
};
use hookrelay_core::state::error_code::Failure;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use worker::wasm_bindgen_futures::JsFuture;
use worker::web_sys::{self, AbortSignal, RequestRedirect};

/// Whose `fetch` makes the call.
#[derive(Clone, Copy)]
pub enum Via<'a> {
    /// The global `fetch`: over the network.
    Network,
    /// A service binding's `fetch`: to another Worker.
    Service(&'a worker::worker_sys::Fetcher),
}

/// Posts `body` to `url` through `via` with `headers`. Anything but a
/// 2xx answer within `timeout_ms` is a classified failure; the call is
/// aborted on timeout.
pub async fn post_via(
    via: Via<'_>,
    url: &str,
    headers: &[(&str, String)],
    body: &str,
    timeout_ms: u64,
    now_ms: i64,
) -> Result<(), Failure> {
    answered(
        send(via, url, headers, body, timeout_ms).await,
        timeout_ms,
        now_ms,
    )
    .1
}

/// [`post_via`] over the network, also answering the receiver's status when one answered (an
/// alert test reports it to the operator).
pub async fn post_answered(
    url: &str,
    headers: &[(&str, String)],
    body: &str,
    timeout_ms: u64,
    now_ms: i64,
) -> (Option<u16>, Result<(), Failure>) {
    answered(
        send(Via::Network, url, headers, body, timeout_ms).await,
        timeout_ms,
        now_ms,
    )
}

/// What a sent request's answer (or its failure) comes to.
fn answered(
    sent: Result<Sent, JsValue>,
    timeout_ms: u64,
    now_ms: i64,
) -> (Option<u16>, Result<(), Failure>) {
    match sent {
        Ok(Sent { status, header }) => {
            let headers = if is_redirect(status) {
                AnswerHeaders {
                    retry_after: None,
                    location: header.as_deref(),
                }
            } else {
                AnswerHeaders {
                    retry_after: header.as_deref(),
                    location: None,
                }
            };
            (Some(status), classify_answer(status, headers, now_ms))
        }
        Err(e) if error_name(&e).as_deref() == Some("TimeoutError") => {
            (None, Err(timed_out(timeout_ms)))
        }
        Err(e) => (None, Err(network_error(&error_text(&e)))),
    }
}

/// An answer as far as its meaning reads it.
struct Sent {
    status: u16,
    /// A refusal's `Retry-After`, or a redirect's `Location`.
    header: Option<String>,
}

/// The status of the answer and the one header it is read with; the drain
/// of its body is started, not awaited.
async fn send(
    via: Via<'_>,
    url: &str,
    headers: &[(&str, String)],
    body: &str,
    timeout_ms: u64,
) -> Result<Sent, JsValue> {
    let h = web_sys::Headers::new()?;
    for (name, value) in headers {
        h.set(name, value)?;
    }
    let init = web_sys::RequestInit::new();
    init.set_method("POST");
    init.set_headers(&h);
    init.set_body(&JsValue::from_str(body));
    // Never followed: a 3xx comes back as it is (DESIGN §3).
    init.set_redirect(RequestRedirect::Manual);
    init.set_signal(Some(&AbortSignal::timeout_with_f64(timeout_ms as f64)));
    let pending = match via {
        Via::Network => {
            let global: web_sys::WorkerGlobalScope = js_sys::global().unchecked_into();
            global.fetch_with_str_and_init(url, &init)
        }
        Via::Service(fetcher) => fetcher.fetch_with_str_and_init(url, &init)?,
    };
    let answer = JsFuture::from(pending).await?;
    // `fetch` resolves to a `Response` and nothing else; an `instanceof`
    // check per call costs about a tenth of the call's wasm time.
    let response: web_sys::Response = answer.unchecked_into();
    let status = response.status();
    let answered = response.headers();
    let header = if is_redirect(status) {
        answered.get("location")?
    } else if reads_retry_after(status) {
        answered.get("retry-after")?
    } else {
        None
    };
    let drained = if drain_body(answered.get("content-length")?.as_deref()) {
        response.array_buffer()
    } else {
        response
            .body()
            .map_or(Err(JsValue::NULL), |b| Ok(b.cancel()))
    };
    // The answer is decided by its status, so the drain is not awaited (an
    // awaited promise costs two closures per call) and its failure (an
    // abort by the timeout, a reset) is dropped, not left unhandled.
    if let Ok(p) = drained {
        IGNORE.with(|ignore| {
            let _ = p.catch(ignore);
        });
    }
    Ok(Sent { status, header })
}

thread_local! {
    /// One handler for every drain's rejection, made once per isolate.
    static IGNORE: Closure<dyn FnMut(JsValue)> = Closure::new(|_: JsValue| {});
}

fn error_name(e: &JsValue) -> Option<String> {
    js_sys::Reflect::get(e, &JsValue::from_str("name"))
        .ok()?
        .as_string()
}

/// A JS error's message (or its text), for the failure's detail.
fn error_text(e: &JsValue) -> String {
    js_sys::Reflect::get(e, &JsValue::from_str("message"))
        .ok()
        .and_then(|m| m.as_string())
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"))
}
