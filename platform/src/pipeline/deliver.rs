//! Phase 3: call the downstream of each leased event, behind its breaker.

use super::Item;
use crate::breaker_store::{admit_call, record_call};
use crate::db::{error_message, payloads};
use crate::{downstream, log, now_ms};
use hookrelay_core::breaker::{circuit_open_failure, Admission, ADMISSION_WHEN_UNREADABLE};
use hookrelay_core::config::DeliveryConfig;
use hookrelay_core::downstream_request::signed_headers;
use hookrelay_core::downstream_response::breaker_cause;
use hookrelay_core::error_code::{ErrorCode, Failure};
use hookrelay_core::metrics::Component;
use hookrelay_core::queued_event::{EventBody, QueuedEvent};
use hookrelay_core::redact::destination_label;
use serde_json::json;
use std::collections::HashMap;
use worker::D1Database;

/// One finished call: the item index and how it went.
pub type Call = (usize, Result<(), Failure>);

/// Calls the downstream of every leased item, in order.
pub async fn deliver(
    db: &D1Database,
    items: &[Item<'_>],
    leased: &[usize],
    cfg: &DeliveryConfig,
    component: Component,
) -> Vec<Call> {
    let refs: Vec<&str> = leased
        .iter()
        .filter_map(|&i| match &items[i].event.body {
            EventBody::Stored { body_ref, .. } => Some(body_ref.as_str()),
            EventBody::Inline { .. } => None,
        })
        .collect();
    let stored = payloads::load_many(db, &refs).await.unwrap_or_default();
    let mut calls = Vec::with_capacity(leased.len());
    for &i in leased {
        let result = deliver_one(db, items[i].event, &stored, cfg, component).await;
        calls.push((i, result));
    }
    calls
}

fn body_of<'a>(
    event: &'a QueuedEvent,
    stored: &'a HashMap<String, String>,
) -> Result<&'a str, Failure> {
    match &event.body {
        EventBody::Inline { body } => Ok(body.as_str()),
        EventBody::Stored { body_ref, .. } => {
            stored.get(body_ref).map(String::as_str).ok_or_else(|| {
                Failure::new(
                    ErrorCode::D1Unavailable,
                    "the claim-checked body could not be loaded from D1",
                )
            })
        }
    }
}

async fn admission(
    db: &D1Database,
    component: Component,
    url: &str,
    cfg: &DeliveryConfig,
) -> Admission {
    match admit_call(db, component, url, now_ms(), &cfg.breaker).await {
        Ok(a) => a,
        Err(e) => {
            log::error(
                component,
                "breaker_unreadable",
                json!({"destination": destination_label(url), "err": error_message(&e)}),
            );
            ADMISSION_WHEN_UNREADABLE
        }
    }
}

async fn deliver_one(
    db: &D1Database,
    event: &QueuedEvent,
    stored: &HashMap<String, String>,
    cfg: &DeliveryConfig,
    component: Component,
) -> Result<(), Failure> {
    let url = &cfg.downstreams[&event.source];
    let body = body_of(event, stored)?;
    let key = cfg.signing_key.as_ref().ok_or_else(|| {
        Failure::new(
            ErrorCode::Unknown,
            "DOWNSTREAM_SIGNING_SECRET is not configured",
        )
    })?;
    if let Admission::Reject { retry_at_ms, cause } = admission(db, component, url, cfg).await {
        return Err(circuit_open_failure(
            &destination_label(url),
            retry_at_ms,
            now_ms(),
            cause,
        ));
    }
    // The clock is read here, as the request is built: a paced replay or a
    // drain never sends a stale X-Timestamp.
    let sent_at = now_ms();
    let headers = signed_headers(
        &event.event_id,
        &event.idempotency_key,
        &event.source,
        key,
        sent_at.div_euclid(1000),
        body.as_bytes(),
    );
    let result = downstream::post(url, &headers, body, cfg.timeout_ms, sent_at).await;
    let cause = breaker_cause(&result);
    if let Err(e) = record_call(db, component, url, cause, now_ms(), &cfg.breaker).await {
        log::error(
            component,
            "breaker_unwritable",
            json!({"destination": destination_label(url), "err": error_message(&e)}),
        );
    }
    result
}
