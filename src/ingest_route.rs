//! `POST /webhooks/{source}`: verify, then enqueue, then answer 202.
//!
//! The 202 is sent only after the queue accepted the message, and after the
//! claim-checked body (if any) is in D1. Any failure before that answers 503
//! with `Retry-After`, so the provider keeps the event and retries.
//!
//! This is the relay's hot path, so it works on the raw request (see
//! `hookrelay_platform::raw_http`): the headers are read once, in one pass,
//! the body once, and the message is serialized from the accepted event
//! without copying it.
//!
//! The common path's two waits (the body, then the queue send) are
//! continued with [`Continuation`]s made once per isolate instead of being
//! awaited in a future (see `hookrelay_platform::continuation` for what
//! that saves). The cold paths, a refusal that drains the body and a body
//! kept in D1 first, are futures.

use crate::{config_cache::relay_config, responses};
use hookrelay_core::claim_check::fits_inline;
use hookrelay_core::config::RelayConfig;
use hookrelay_core::ingest::{accept, precheck, Accepted, Inbound};
use hookrelay_core::metrics::{Component, Metric, MetricName};
use hookrelay_core::queued_event::{EventBody, QueuedEvent, MESSAGE_VERSION};
use hookrelay_platform::continuation::{Carried, Continuation};
use hookrelay_platform::db::{error_message, payloads};
use hookrelay_platform::entry::respond;
use hookrelay_platform::{body, log, metrics, now_ms, queue_send, raw_http};
use js_sys::Uint8Array;
use std::future::Future;
use wasm_bindgen::{JsCast, JsValue};
use worker::wasm_bindgen_futures::{future_to_promise, JsFuture};
use worker::web_sys::{Request, Response};
use worker::{worker_sys, Context, Env, Result};

/// What a step hands back to JS: the answer (or a promise of it), or a rejection.
type JsResult = std::result::Result<JsValue, JsValue>;

/// Seconds a provider is asked to wait after a 503.
const RETRY_AFTER_S: u32 = 30;

thread_local! {
    static BODY_READ: Continuation = Continuation::new(body_read);
    static SENT: Continuation = Continuation::new(sent);
}

/// Handles one webhook delivery: the answer, or a promise of it.
pub fn handle(req: Request, env: Env, ctx: JsValue, source: &str) -> JsResult {
    let config = relay_config(&env);
    let config = match &*config {
        Ok(c) => c,
        Err(e) => return answer(&env, &ctx, responses::config_invalid(e).map(Into::into)),
    };
    let (method, content_length) = raw_http::precheck_parts(&req);
    if let Err(r) = precheck(config, &method, source, content_length) {
        return Ok(later(env, ctx, async move {
            body::drain(&worker::Request::from(req)).await;
            responses::rejection(&r).map(Into::into)
        }));
    }
    let promise = match req.array_buffer() {
        Ok(p) => p,
        Err(e) => return answer(&env, &ctx, Err(e.into())),
    };
    let carried = [req.into(), env.into(), ctx, JsValue::from_str(source)];
    Ok(BODY_READ.with(|c| c.after(&promise, &carried)).into())
}

/// The body is in: verify, then send (or keep the body in D1 first).
fn body_read(carried: Carried, buffer: JsResult) -> JsResult {
    let [req, env, ctx, source] = carried;
    let env: Env = env.unchecked_into();
    let buffer = match buffer {
        Ok(b) => b,
        Err(e) => return answer(&env, &ctx, Err(e.into())),
    };
    let config = relay_config(&env);
    let config = match &*config {
        Ok(c) => c,
        Err(e) => return answer(&env, &ctx, responses::config_invalid(e).map(Into::into)),
    };
    let source = source.as_string().unwrap_or_default();
    let req: Request = req.unchecked_into();
    let body = Uint8Array::new(&buffer).to_vec();
    let now_ms = now_ms();
    let accepted = match verify(config, &req, &source, &body, now_ms) {
        Ok(a) => a,
        Err(response) => return answer(&env, &ctx, response),
    };
    let message = queued_event(accepted, now_ms);
    let json = match serde_json::to_string(&message) {
        Ok(j) => j,
        Err(e) => return answer(&env, &ctx, Err(e.into())),
    };
    if !fits_inline(json.len()) {
        return Ok(later(
            env.clone(),
            ctx,
            enqueue_stored(env, message, now_ms),
        ));
    }
    let promise = match queue_send::start_json(&env, "WEBHOOKS", &json) {
        Ok(p) => p,
        Err(e) => {
            return answer(
                &env,
                &ctx,
                sent_failed(&message.event_id, &message.source, &e),
            )
        }
    };
    let carried = [
        env.into(),
        ctx,
        JsValue::from_str(&message.source),
        JsValue::from_str(&message.event_id),
    ];
    Ok(SENT.with(|c| c.after(&promise, &carried)).into())
}

/// The queue answered: 202, or 503 when it refused.
fn sent(carried: Carried, outcome: JsResult) -> JsResult {
    let [env, ctx, source, event_id] = carried;
    let env: Env = env.unchecked_into();
    let source = source.as_string().unwrap_or_default();
    let event_id = event_id.as_string().unwrap_or_default();
    let response = match outcome {
        Ok(_) => queued(&source, &event_id),
        Err(e) => sent_failed(&event_id, &source, &e.into()),
    };
    answer(&env, &ctx, response)
}

/// The headers, the verification and the event to enqueue, or the refusal.
fn verify(
    config: &RelayConfig,
    req: &Request,
    source: &str,
    body: &[u8],
    now_ms: i64,
) -> std::result::Result<Accepted, Result<Response>> {
    let (method, headers) = raw_http::head(req);
    let inbound = Inbound {
        method: &method,
        source,
        headers: headers.as_slice(),
        header_list: &headers,
        body,
        now_ms,
    };
    accept(config, &inbound).map_err(|r| {
        log::info(
            Component::Relay,
            "rejected",
            log::fields! {"source": source, "status": r.status(), "code": r.code()},
        );
        responses::rejection(&r).map(Into::into)
    })
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
/// carrying its reference is sent.
async fn enqueue_stored(env: Env, mut message: QueuedEvent, now_ms: i64) -> Result<Response> {
    let body = message.inline_body().unwrap_or_default();
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
    let sent = match queue_send::start_json(&env, "WEBHOOKS", &json) {
        Ok(promise) => JsFuture::from(promise).await.map_err(worker::Error::from),
        Err(e) => Err(e),
    };
    match sent {
        Ok(_) => queued(&message.source, &message.event_id),
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

/// 202: the queue took the event.
fn queued(source: &str, event_id: &str) -> Result<Response> {
    // Counted, not logged: an accepted event is traceable through the
    // admin events API, and one console line per request cost more than
    // the HMAC, the JSON check and the queue send together (bench target 4)
    // while doubling a busy relay's log volume. Refusals and failures are
    // still logged.
    metrics::count(
        Metric::new(MetricName::Enqueue, Component::Relay).source(source),
        1,
    );
    let answer = format!(
        "{{\"event_id\":{},\"status\":\"queued\"}}",
        serde_json::to_string(event_id)?
    );
    raw_http::json_text(202, &answer)
}
