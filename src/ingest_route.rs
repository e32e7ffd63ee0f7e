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

use crate::{config_cache::relay_config, responses};
use hookrelay_core::claim_check::fits_inline;
use hookrelay_core::ingest::{accept, precheck, Accepted, Inbound};
use hookrelay_core::metrics::{Component, Metric, MetricName};
use hookrelay_core::queued_event::{EventBody, QueuedEvent, MESSAGE_VERSION};
use hookrelay_platform::db::{error_message, payloads};
use hookrelay_platform::{body, log, metrics, now_ms, queue_send, raw_http};
use worker::web_sys::{Request, Response};
use worker::{Env, Result};

/// Seconds a provider is asked to wait after a 503.
const RETRY_AFTER_S: u32 = 30;

/// Handles one webhook delivery.
pub async fn handle(req: Request, env: &Env, source: &str) -> Result<Response> {
    let config = relay_config(env);
    let config = match &*config {
        Ok(c) => c,
        Err(e) => return responses::config_invalid(e).map(Into::into),
    };
    let method = req.method();
    let headers = raw_http::header_list(&req);
    let content_length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.trim().parse::<u64>().ok());
    if let Err(r) = precheck(config, &method, source, content_length) {
        body::drain(&mut worker::Request::from(req)).await;
        return responses::rejection(&r).map(Into::into);
    }
    let body = raw_http::bytes(&req).await?;
    let inbound = Inbound {
        method: &method,
        source,
        headers: headers.as_slice(),
        header_list: &headers,
        body: &body,
        now_ms: now_ms(),
    };
    let accepted = match accept(config, &inbound) {
        Ok(a) => a,
        Err(r) => {
            log::info(
                Component::Relay,
                "rejected",
                log::fields! {"source": source, "status": r.status(), "code": r.code()},
            );
            return responses::rejection(&r).map(Into::into);
        }
    };
    enqueue(env, accepted, inbound.now_ms).await
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

async fn enqueue(env: &Env, accepted: Accepted, now_ms: i64) -> Result<Response> {
    let body_bytes = accepted.body.len() as u64;
    let mut message = QueuedEvent {
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
    };
    let mut json = serde_json::to_string(&message)?;
    if !fits_inline(json.len()) {
        let body = message.inline_body().unwrap_or_default();
        if !claim_check(env, &message.event_id, &message.source, body, now_ms).await {
            return responses::unavailable("the event store (D1) is unavailable", RETRY_AFTER_S)
                .map(Into::into);
        }
        message.body = EventBody::Stored {
            body_ref: message.event_id.clone(),
            body_bytes,
        };
        json = serde_json::to_string(&message)?;
    }
    let QueuedEvent {
        event_id, source, ..
    } = &message;
    let sent = match env.queue("WEBHOOKS") {
        Ok(queue) => queue_send::send_json(&queue, &json).await,
        Err(e) => Err(e),
    };
    if let Err(e) = sent {
        log::error(
            Component::Relay,
            "enqueue_failed",
            log::fields! {"event_id": event_id, "source": source, "err": error_message(&e)},
        );
        return responses::unavailable("the queue did not accept the event", RETRY_AFTER_S)
            .map(Into::into);
    }
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
