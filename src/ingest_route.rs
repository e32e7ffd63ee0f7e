//! `POST /webhooks/{source}`: verify, then enqueue, then answer 202.
//!
//! The 202 is sent only after the queue accepted the message, and after the
//! claim-checked body (if any) is in D1. Any failure before that answers 503
//! with `Retry-After`, so the provider keeps the event and retries.

use crate::{config_cache::relay_config, responses};
use hookrelay_core::claim_check::fits_inline;
use hookrelay_core::ingest::{accept, precheck, Accepted, Inbound};
use hookrelay_core::metrics::{Component, Metric, MetricName};
use hookrelay_core::queued_event::{EventBody, QueuedEvent, MESSAGE_VERSION};
use hookrelay_platform::db::{error_message, payloads};
use hookrelay_platform::{body, log, metrics, now_ms, queue_send};
use serde_json::json;
use std::collections::BTreeMap;
use worker::{Env, Request, Response, Result};

/// Seconds a provider is asked to wait after a 503.
const RETRY_AFTER_S: u32 = 30;

/// Handles one webhook delivery.
pub async fn handle(mut req: Request, env: &Env, source: &str) -> Result<Response> {
    let config = relay_config(env);
    let config = match &*config {
        Ok(c) => c,
        Err(e) => return responses::config_invalid(e),
    };
    let method = req.method().to_string();
    let content_length = req
        .headers()
        .get("content-length")?
        .and_then(|v| v.trim().parse::<u64>().ok());
    if let Err(r) = precheck(config, &method, source, content_length) {
        body::drain(&mut req).await;
        return responses::rejection(&r);
    }
    let body = req.bytes().await?;
    let header_list: Vec<(String, String)> = req.headers().entries().collect();
    let header_map: BTreeMap<String, String> = header_list.iter().cloned().collect();
    let inbound = Inbound {
        method: &method,
        source,
        headers: &header_map,
        header_list: &header_list,
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
            return responses::rejection(&r);
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
    let Accepted {
        event_id,
        idempotency_key,
        source,
        delivery_id,
        headers,
        body,
    } = accepted;
    let body_bytes = body.len() as u64;
    let message = |body: EventBody| QueuedEvent {
        v: MESSAGE_VERSION,
        event_id: event_id.clone(),
        idempotency_key: idempotency_key.clone(),
        source: source.clone(),
        delivery_id: delivery_id.clone(),
        received_at_ms: now_ms,
        headers: headers.clone(),
        body,
    };
    let inline = serde_json::to_string(&message(EventBody::Inline { body: body.clone() }))?;
    let claim_checked = !fits_inline(inline.len());
    let json = if claim_checked {
        if !claim_check(env, &event_id, &source, &body, now_ms).await {
            return responses::unavailable("the event store (D1) is unavailable", RETRY_AFTER_S);
        }
        serde_json::to_string(&message(EventBody::Stored {
            body_ref: event_id.clone(),
            body_bytes,
        }))?
    } else {
        inline
    };
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
        return responses::unavailable("the queue did not accept the event", RETRY_AFTER_S);
    }
    metrics::count(
        Metric::new(MetricName::Enqueue, Component::Relay).source(&source),
        1,
    );
    log::info(
        Component::Relay,
        "enqueued",
        log::fields! {"event_id": event_id, "source": source, "bytes": body_bytes, "claim_checked": claim_checked},
    );
    Ok(Response::from_json(&json!({"event_id": event_id, "status": "queued"}))?.with_status(202))
}
