//! `POST /webhooks/{source}`: verify, then enqueue, then answer 202.
//!
//! The 202 is sent only after the queue accepted the message, and after the
//! claim-checked body (if any) is in D1. Any failure before that answers 503
//! with `Retry-After`, so the provider keeps the event and retries.

use crate::{config_cache::relay_config, event_store, responses};
use hookrelay_core::claim_check::fits_inline;
use hookrelay_core::ingest::{accept, precheck, Accepted, Inbound};
use hookrelay_core::queued_event::{EventBody, QueuedEvent, MESSAGE_VERSION};
use hookrelay_platform::{d1, log, now_ms, queue_send};
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
                "relay",
                "rejected",
                json!({"source": source, "status": r.status(), "code": r.code()}),
            );
            return responses::rejection(&r);
        }
    };
    enqueue(env, accepted, inbound.now_ms).await
}

async fn enqueue(env: &Env, accepted: Accepted, now_ms: i64) -> Result<Response> {
    let body_bytes = accepted.body.len() as u64;
    let mut message = QueuedEvent {
        v: MESSAGE_VERSION,
        event_id: accepted.event_id.clone(),
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
    let mut claim_checked = false;
    if !fits_inline(json.len()) {
        // Queue messages are limited to 128 KB: keep the body in D1 first.
        let EventBody::Inline { body } = &message.body else {
            unreachable!("built inline above")
        };
        if let Err(e) =
            event_store::store_payload(env, &message.event_id, &message.source, body, now_ms).await
        {
            log::error(
                "relay",
                "claim_check_failed",
                json!({"event_id": message.event_id, "err": d1::error_message(&e)}),
            );
            return responses::unavailable("the event store (D1) is unavailable", RETRY_AFTER_S);
        }
        message.body = EventBody::Stored {
            body_ref: message.event_id.clone(),
            body_bytes,
        };
        json = serde_json::to_string(&message)?;
        claim_checked = true;
    }
    let sent = match env.queue("WEBHOOKS") {
        Ok(queue) => queue_send::send_json(&queue, &json).await,
        Err(e) => Err(e),
    };
    if let Err(e) = sent {
        log::error(
            "relay",
            "enqueue_failed",
            json!({"event_id": message.event_id, "source": message.source, "err": e.to_string()}),
        );
        return responses::unavailable("the queue did not accept the event", RETRY_AFTER_S);
    }
    log::info(
        "relay",
        "enqueued",
        json!({"event_id": message.event_id, "source": message.source, "bytes": body_bytes, "claim_checked": claim_checked}),
    );
    Ok(
        Response::from_json(&json!({"event_id": message.event_id, "status": "queued"}))?
            .with_status(202),
    )
}
