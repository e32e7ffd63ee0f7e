//! `POST /webhooks/{source}`: verify, then enqueue, then answer as the
//! source's provider needs (202 with the event id for most).
//!
//! The answer on success is sent only after the queue accepted the message,
//! and after the claim-checked body (if any) is in D1. Any failure before
//! that answers 503 with `Retry-After`, so the provider keeps the event and
//! retries. A handshake is answered at once and never enqueued.
//!
//! This is the relay's hot path, so it works on the raw request (see
//! `hookrelay_platform::raw_http`): the headers are read once, in one pass,
//! the body once, and the message is serialized from the accepted event
//! without copying it.
//!
//! The common path's two waits (the body, then the queue send) are the
//! module entry's (`src/entry.js`): it reads the body, sends the message
//! it is given, and calls back into the three steps below, which decide.
//! Every check, every answer and the message are made here; the entry only
//! waits and hands values through. The cold paths, a refusal that drains
//! the body and a body kept in D1 first, are futures.
//!
//! 1. [`begin`], from the router: the refusal, or the go-ahead to read the
//!    body (`{ limit, drain, source }`: how much to read, and the source).
//! 2. [`body_read`]: the answer, or the message to send and its event id
//!    (`{ eventId, message }`).
//! 3. [`sent`]: the answer on success, or 503 when the queue refused.
//!
//! The entry tells an answer (a `Response`, or a `Promise` of one) from
//! these plain objects, which the two small constructors below make in one
//! call each.

use crate::{
    config_cache::relay_config, routes::responses, routes::signature_failures,
    routes::signature_limit,
};
use hookrelay_core::metrics::{Component, Metric, MetricName};
use hookrelay_core::receive::claim_check::fits_inline;
use hookrelay_core::receive::front_door::{
    accept, accept_signed, precheck, Accepted, Admission, Inbound, Rejection,
};
use hookrelay_core::receive::queued_event::{EventBody, QueuedEvent, MESSAGE_VERSION};
use hookrelay_core::signature::answer::{self, Reply};
use hookrelay_core::signature::{Answer, SignatureError, Verified};
use hookrelay_platform::db::{error_message, payloads};
use hookrelay_platform::fetch_answer::respond;
use hookrelay_platform::{body, log, metrics, now_ms, queue_send, raw_http, webcrypto};
use js_sys::Uint8Array;
use std::future::Future;
use wasm_bindgen::{JsCast, JsValue};
use worker::wasm_bindgen_futures::{future_to_promise, JsFuture};
use worker::web_sys::{Request, Response};
use worker::{worker_sys, Context, Env, Result};

#[wasm_bindgen::prelude::wasm_bindgen(inline_js = r#"
export function go_ahead(limit, drain, source) { return { limit, drain, source }; }
export function to_send(eventId, message) { return { eventId, message }; }
"#)]
extern "C" {
    /// The go-ahead to read a webhook's body, for the module entry.
    fn go_ahead(limit: f64, drain: f64, source: &str) -> JsValue;
    /// The message to send and its event id, for the module entry.
    fn to_send(event_id: &str, message: &str) -> JsValue;
}

/// What a step hands back to JS: the answer (or a promise of it), or a rejection.
type JsResult = std::result::Result<JsValue, JsValue>;

/// Seconds a provider is asked to wait after a 503.
const RETRY_AFTER_S: u32 = 30;

/// Step 1: the configuration and the precheck (method, source, declared
/// length), before the body is read. The refusal (as a promise that
/// drains the body first), the 429 of an address blocked for failing
/// signature checks (its body never read), or the go-ahead,
/// `{ limit, drain, source }`.
/// The entry then reads the body and calls [`body_read`]. A
/// body of undeclared length (sent chunked) is read up to `limit` + 1
/// bytes and drained, unkept, up to `drain`, so an oversized one is
/// refused with a 413 without ever being held whole.
pub fn begin(req: Request, env: Env, ctx: JsValue, source: &str) -> JsResult {
    let config = relay_config(&env);
    let config = match &*config {
        Ok(c) => c,
        Err(e) => return answer(&env, &ctx, responses::config_invalid(e).map(Into::into)),
    };
    let pre = raw_http::precheck_parts(&req);
    if let Err(r) = precheck(config.front_door(), &pre.method, source, pre.content_length) {
        return Ok(later(env, ctx, async move {
            body::drain(&worker::Request::from(req)).await;
            responses::rejection(&r).map(Into::into)
        }));
    }
    if let Some(r) = signature_limit::still_blocked(source, pre.client_ip.as_deref(), now_ms()) {
        return answer(&env, &ctx, responses::rejection(&r).map(Into::into));
    }
    Ok(go_ahead(
        config.max_body_bytes as f64,
        body::DRAIN_LIMIT_BYTES as f64,
        source,
    ))
}

/// Step 2: the body is in (`body`, the entry's array, copied into wasm
/// once here and kept for a WebCrypto check; `None` when reading it
/// failed, with `failure` saying why). `head` is the request's method, URL and headers
/// in `raw_http`'s text form. Verifies and builds the message:
/// `{ eventId, message }`, the JSON text for the entry to send and the id
/// to hand to [`sent`]. Anything else is the answer: a refusal, a
/// handshake's answer, a failure, or the promise of one (a check in
/// WebCrypto: a public key, another hash, or a large HMAC-SHA256; or a body
/// kept in D1 first).
pub fn body_read(
    env: Env,
    ctx: JsValue,
    source: &str,
    head: &str,
    body: Option<Uint8Array>,
    failure: JsValue,
) -> JsResult {
    let Some(js_body) = body else {
        return answer(&env, &ctx, Err(failure.into()));
    };
    let body = js_body.to_vec();
    let config = relay_config(&env);
    let config = match &*config {
        Ok(c) => c,
        Err(e) => return answer(&env, &ctx, responses::config_invalid(e).map(Into::into)),
    };
    let now_ms = now_ms();
    let parsed = raw_http::head(head);
    let inbound = inbound(&parsed, source, &body, now_ms);
    match accept(config.front_door(), &inbound) {
        Err(r @ Rejection::Signature(_)) => {
            let ip = client_ip(&parsed);
            let source = source.to_string();
            let request_ctx = ctx.clone();
            Ok(later(env.clone(), ctx, async move {
                refused_signature(&env, &request_ctx, &source, ip.as_deref(), &r, now_ms).await
            }))
        }
        Err(r) => answer(&env, &ctx, refused(&env, &ctx, source, &r, now_ms)),
        Ok(Admission::Event(accepted)) => enqueue(env, ctx, accepted, now_ms),
        Ok(Admission::Handshake(reply)) => answer(&env, &ctx, handshake(source, &reply)),
        Ok(Admission::Deferred {
            check,
            public_key,
            verified,
        }) => {
            let (head, source) = (head.to_string(), source.to_string());
            let request_ctx = ctx.clone();
            Ok(later(env.clone(), ctx, async move {
                if !webcrypto::holds(&check, public_key.as_deref(), &js_body).await? {
                    let r = Rejection::Signature(SignatureError::Mismatch);
                    let ip = client_ip(&raw_http::head(&head));
                    return refused_signature(
                        &env,
                        &request_ctx,
                        &source,
                        ip.as_deref(),
                        &r,
                        now_ms,
                    )
                    .await;
                }
                signed_in_webcrypto(&env, &request_ctx, &head, &source, &body, now_ms, verified)
                    .await
            }))
        }
    }
}

/// The front door's view of the request.
fn inbound<'a>(
    head: &'a raw_http::Head<'a>,
    source: &'a str,
    body: &'a [u8],
    now_ms: i64,
) -> Inbound<'a, [(String, String)]> {
    Inbound {
        method: head.method,
        source,
        url: head.url,
        headers: head.headers.as_slice(),
        header_list: &head.headers,
        body,
        now_ms,
    }
}

/// After WebCrypto's check held: the body's checks, then the event sent
/// from here (the entry's send path has returned by now).
async fn signed_in_webcrypto(
    env: &Env,
    ctx: &JsValue,
    head: &str,
    source: &str,
    body: &[u8],
    now_ms: i64,
    verified: Verified,
) -> Result<Response> {
    let config = relay_config(env);
    let config = match &*config {
        Ok(c) => c,
        Err(e) => return responses::config_invalid(e).map(Into::into),
    };
    let parsed = raw_http::head(head);
    match accept_signed(
        config.front_door(),
        &inbound(&parsed, source, body, now_ms),
        verified,
    ) {
        Err(r @ Rejection::Signature(_)) => {
            let ip = client_ip(&parsed);
            refused_signature(env, ctx, source, ip.as_deref(), &r, now_ms).await
        }
        Err(r) => refused(env, ctx, source, &r, now_ms),
        Ok(Admission::Event(accepted)) => {
            let answer = accepted.answer;
            let message = queued_event(accepted, now_ms);
            let json = serde_json::to_string(&message)?;
            if fits_inline(json.len()) {
                send_now(env, &message, &json, answer).await
            } else {
                enqueue_stored(env.clone(), message, now_ms, answer).await
            }
        }
        Ok(Admission::Handshake(reply)) => handshake(source, &reply),
        Ok(Admission::Deferred { .. }) => Err(worker::Error::RustError(
            "a signed request asked for a second WebCrypto check".into(),
        )),
    }
}

/// The message for an accepted event: `{ eventId, message }` for the entry
/// to send, or, for a body too large for a queue message, the promise of
/// it kept in D1 first and sent from here.
fn enqueue(env: Env, ctx: JsValue, accepted: Accepted, now_ms: i64) -> JsResult {
    let answer_on_success = accepted.answer;
    let message = queued_event(accepted, now_ms);
    let text = match serde_json::to_string(&message) {
        Ok(t) => t,
        Err(e) => return answer(&env, &ctx, Err(e.into())),
    };
    if !fits_inline(text.len()) {
        return Ok(later(
            env.clone(),
            ctx,
            enqueue_stored(env, message, now_ms, answer_on_success),
        ));
    }
    Ok(to_send(&message.event_id, &text))
}

/// Step 3: the queue answered (`failure` is `undefined` when it took the
/// event): the source's answer on success, or 503 when it refused.
pub fn sent(env: Env, ctx: JsValue, source: &str, event_id: &str, failure: JsValue) -> JsResult {
    let response = if failure.is_undefined() {
        let config = relay_config(&env);
        let on_success = match &*config {
            Ok(c) => c.sources.get(source).map(|s| s.spec.scheme.answer),
            Err(_) => None,
        };
        queued(source, event_id, on_success.unwrap_or(Answer::Queued))
    } else {
        sent_failed(event_id, source, &failure.into())
    };
    answer(&env, &ctx, response)
}

/// `CF-Connecting-IP` among the request's headers.
fn client_ip(head: &raw_http::Head<'_>) -> Option<String> {
    head.headers
        .iter()
        .find(|(name, _)| name == "cf-connecting-ip")
        .map(|(_, value)| value.clone())
}

/// A failed signature check: refused as any refusal (401), and counted on
/// the rate limit, which turns it into a 429 once the address is over.
async fn refused_signature(
    env: &Env,
    ctx: &JsValue,
    source: &str,
    ip: Option<&str>,
    r: &Rejection,
    now_ms: i64,
) -> Result<Response> {
    let answer = refused(env, ctx, source, r, now_ms);
    match signature_limit::count_failure(env, source, ip, now_ms).await {
        Some(limited) => responses::rejection(&limited).map(Into::into),
        None => answer,
    }
}

/// A refusal, logged; a failed signature check (401) is also counted for
/// the `signature_failures` alarm.
fn refused(env: &Env, ctx: &JsValue, source: &str, r: &Rejection, now_ms: i64) -> Result<Response> {
    if let Rejection::Signature(_) = r {
        metrics::count(
            Metric::new(MetricName::SignatureFailures, Component::Relay).source(source),
            1,
        );
        signature_failures::record(env, ctx, source, now_ms);
    }
    log::info(
        Component::Relay,
        "rejected",
        log::fields! {"source": source, "status": r.status(), "code": r.code()},
    );
    responses::rejection(r).map(Into::into)
}

/// A handshake's answer: counted and logged, never enqueued.
fn handshake(source: &str, reply: &Reply) -> Result<Response> {
    metrics::count(
        Metric::new(MetricName::Handshake, Component::Relay).source(source),
        1,
    );
    log::info(
        Component::Relay,
        "handshake",
        log::fields! {"source": source, "status": reply.status},
    );
    reply_response(reply)
}

/// A reply as a response.
fn reply_response(reply: &Reply) -> Result<Response> {
    let resp = if reply.body.is_empty() {
        worker::Response::empty()?
    } else {
        worker::Response::ok(&reply.body)?
    }
    .with_status(reply.status);
    if let Some(content_type) = reply.content_type {
        resp.headers().set("content-type", content_type)?;
    }
    Ok(resp.into())
}

/// The answer handed back, after the request's counts are written:
/// Analytics Engine inline (its write is synchronous), a D1 total (never
/// the ingest's own counters) in a `wait_until`.
fn answer(env: &Env, ctx: &JsValue, response: Result<Response>) -> JsResult {
    if let Some(totals) = metrics::flush_analytics(env) {
        let env = env.clone();
        let ctx = Context::new(ctx.clone().unchecked_into::<worker_sys::Context>());
        ctx.wait_until(async move { metrics::write_d1(&env, &totals).await });
    }
    respond(response, Component::Relay, responses::internal)
}

/// A cold path's answer, as a promise.
fn later(env: Env, ctx: JsValue, f: impl Future<Output = Result<Response>> + 'static) -> JsValue {
    future_to_promise(async move { answer(&env, &ctx, f.await) }).into()
}

fn queued_event(accepted: Accepted, now_ms: i64) -> QueuedEvent {
    QueuedEvent {
        v: MESSAGE_VERSION,
        event_id: accepted.event_id,
        idempotency_key: accepted.idempotency_key,
        source: accepted.source,
        delivery_id: accepted.delivery_id,
        received_at_ms: now_ms,
        headers: accepted.headers,
        body: EventBody::Inline {
            body: accepted.body,
        },
    }
}

/// Queue messages are limited to 128 KB: keeps the body in D1 first.
/// Whether it was kept.
async fn claim_check(env: &Env, event_id: &str, source: &str, body: &str, now_ms: i64) -> bool {
    let stored = match env.d1("DB") {
        Ok(db) => payloads::store(&db, event_id, source, body, now_ms).await,
        Err(e) => Err(e),
    };
    if let Err(e) = &stored {
        log::error(
            Component::Relay,
            "claim_check_failed",
            log::fields! {"event_id": event_id, "err": error_message(e)},
        );
    }
    stored.is_ok()
}

/// A body too large for a queue message: kept in D1, then the message
/// carrying its reference is sent. `message` is the one [`body_read`]
/// built, with its body inline.
async fn enqueue_stored(
    env: Env,
    mut message: QueuedEvent,
    now_ms: i64,
    on_success: Answer,
) -> Result<Response> {
    let body = message
        .inline_body()
        .expect("the ingest hands over the message queued_event built, whose body is inline");
    let body_bytes = body.len() as u64;
    if !claim_check(&env, &message.event_id, &message.source, body, now_ms).await {
        return responses::unavailable("the event store (D1) is unavailable", RETRY_AFTER_S)
            .map(Into::into);
    }
    message.body = EventBody::Stored {
        body_ref: message.event_id.clone(),
        body_bytes,
    };
    let json = serde_json::to_string(&message)?;
    send_now(&env, &message, &json, on_success).await
}

/// Sends a message from here (not through the entry's send) and answers.
async fn send_now(
    env: &Env,
    message: &QueuedEvent,
    json: &str,
    on_success: Answer,
) -> Result<Response> {
    let sent = match queue_send::start_json(env, "WEBHOOKS", json) {
        Ok(promise) => JsFuture::from(promise).await.map_err(worker::Error::from),
        Err(e) => Err(e),
    };
    match sent {
        Ok(_) => queued(&message.source, &message.event_id, on_success),
        Err(e) => sent_failed(&message.event_id, &message.source, &e),
    }
}

/// 503: the queue did not take the event, so the provider must retry.
fn sent_failed(event_id: &str, source: &str, e: &worker::Error) -> Result<Response> {
    log::error(
        Component::Relay,
        "enqueue_failed",
        log::fields! {"event_id": event_id, "source": source, "err": error_message(e)},
    );
    responses::unavailable("the queue did not accept the event", RETRY_AFTER_S).map(Into::into)
}

/// The queue took the event: the source's answer on success (202 with the
/// event id for most).
fn queued(source: &str, event_id: &str, on_success: Answer) -> Result<Response> {
    // Counted, not logged: an accepted event is traceable through the
    // admin events API, and one console line per request cost more than
    // the HMAC, the JSON check and the queue send together (bench target 4)
    // while doubling a busy relay's log volume. Refusals and failures are
    // still logged.
    metrics::count(
        Metric::new(MetricName::Enqueue, Component::Relay).source(source),
        1,
    );
    let reply = answer::on_success(on_success, event_id);
    if reply.status == 202 {
        // The common answer, on the hot path's one shared headers object.
        return raw_http::json_text(202, &reply.body);
    }
    reply_response(&reply)
}
