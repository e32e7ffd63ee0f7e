//! Phase 3: call the downstream of each leased event, behind its breaker,
//! or park it (`hookrelay_core::parking::decide`).

use super::Item;
use crate::breaker_store::{admit_call, peek, record_call};
use crate::db::{drains, error_message, payloads};
use crate::{downstream, log, now_ms};
use hookrelay_core::breaker::{Admission, ADMISSION_WHEN_UNREADABLE};
use hookrelay_core::config::DeliveryConfig;
use hookrelay_core::downstream_request::signed_headers;
use hookrelay_core::downstream_response::breaker_cause;
use hookrelay_core::error_code::{ErrorCode, Failure};
use hookrelay_core::metrics::Component;
use hookrelay_core::parking::{decide, parks_behind_drain, CallDecision, Caller};
use hookrelay_core::queued_event::{EventBody, QueuedEvent};
use hookrelay_core::redact::destination_label;
use hookrelay_core::signature::SigningKey;
use serde_json::json;
use std::collections::HashMap;
use worker::D1Database;

/// What one leased event came to.
#[derive(Debug, Clone)]
pub enum Attempt {
    /// A call was made (or could not be), with its result.
    Called(Result<(), Failure>),
    /// No call: the event is to be parked for `destination`.
    Parked {
        /// The destination URL.
        destination: String,
        /// The failure that opened the breaker, when known.
        cause: Option<ErrorCode>,
        /// When the breaker admits its next probe, when it is open.
        probe_at_ms: Option<i64>,
    },
}

/// One finished item: its index and what it came to.
pub type Call = (usize, Attempt);

/// Calls the downstream of every leased item, in order, or parks it.
pub async fn deliver(
    db: &D1Database,
    items: &[Item<'_>],
    leased: &[usize],
    cfg: &DeliveryConfig,
    component: Component,
    caller: Caller,
) -> Vec<Call> {
    let mut draining = draining(db, items, leased, cfg, caller).await;
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
        let event = items[i].event;
        let url = &cfg.downstreams[&event.source];
        let drain = draining.get(url.as_str()).copied();
        let attempt = deliver_one(db, event, &stored, cfg, component, caller, drain).await;
        if let Attempt::Parked {
            destination, cause, ..
        } = &attempt
        {
            // Later events of this batch queue behind the one just parked.
            draining.insert(destination.clone(), *cause);
        }
        calls.push((i, attempt));
    }
    calls
}

/// The destinations of `leased` that have a drain running, with the cause
/// it recorded, in one round trip, when this caller could park behind one.
/// If D1 cannot say, none is taken as draining: the breaker still guards
/// the call.
async fn draining(
    db: &D1Database,
    items: &[Item<'_>],
    leased: &[usize],
    cfg: &DeliveryConfig,
    caller: Caller,
) -> HashMap<String, Option<ErrorCode>> {
    if !parks_behind_drain(true, cfg.breaker_open_action, caller) {
        return HashMap::new();
    }
    let mut urls: Vec<&str> = leased
        .iter()
        .map(|&i| cfg.downstreams[&items[i].event.source].as_str())
        .collect();
    urls.sort_unstable();
    urls.dedup();
    drains::active(db, &urls)
        .await
        .unwrap_or_default()
        .into_iter()
        .collect()
}

/// The body of `event`: inline, or from the claim-checked bodies loaded.
pub(crate) fn body_of<'a>(
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

/// The breaker's admission for a call to `url`, claiming the probe when
/// it is due; an unreadable breaker admits (`ADMISSION_WHEN_UNREADABLE`).
pub(crate) async fn admission(
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

/// The decision for one event: queue behind a running drain without
/// touching the breaker, else ask the breaker and decide from its answer.
async fn decision(
    db: &D1Database,
    url: &str,
    cfg: &DeliveryConfig,
    component: Component,
    caller: Caller,
    drain: Option<Option<ErrorCode>>,
) -> CallDecision {
    let label = destination_label(url);
    let drain_active = drain.is_some();
    if parks_behind_drain(drain_active, cfg.breaker_open_action, caller) {
        // The breaker's cause while it is open, else the drain's record of it.
        let open_cause = peek(db, url).await.ok().and_then(|s| s.cause());
        let cause = open_cause.or(drain.flatten());
        return match decide(
            Admission::Allow,
            true,
            cfg.breaker_open_action,
            caller,
            &label,
            now_ms(),
        ) {
            CallDecision::Park { probe_at_ms, .. } => CallDecision::Park { cause, probe_at_ms },
            other => other,
        };
    }
    let admitted = crate::outlined::outlined(admission(db, component, url, cfg)).await;
    decide(
        admitted,
        drain_active,
        cfg.breaker_open_action,
        caller,
        &label,
        now_ms(),
    )
}

async fn deliver_one(
    db: &D1Database,
    event: &QueuedEvent,
    stored: &HashMap<String, String>,
    cfg: &DeliveryConfig,
    component: Component,
    caller: Caller,
    drain: Option<Option<ErrorCode>>,
) -> Attempt {
    let url = &cfg.downstreams[&event.source];
    let body = match body_of(event, stored) {
        Ok(b) => b,
        Err(f) => return Attempt::Called(Err(f)),
    };
    let Some(key) = cfg.signing_key.as_ref() else {
        return Attempt::Called(Err(no_signing_key()));
    };
    match decision(db, url, cfg, component, caller, drain).await {
        CallDecision::Call => Attempt::Called(
            crate::outlined::outlined(call(db, event, body, url, key, cfg, component)).await,
        ),
        CallDecision::Refuse(f) => Attempt::Called(Err(f)),
        CallDecision::Park { cause, probe_at_ms } => Attempt::Parked {
            destination: url.clone(),
            cause,
            probe_at_ms,
        },
    }
}

/// The failure when no downstream signing key is configured.
pub(crate) fn no_signing_key() -> Failure {
    Failure::new(
        ErrorCode::Unknown,
        "DOWNSTREAM_SIGNING_SECRET is not configured",
    )
}

/// One signed call to `url`, with its result recorded on the breaker.
pub(crate) async fn call(
    db: &D1Database,
    event: &QueuedEvent,
    body: &str,
    url: &str,
    key: &SigningKey,
    cfg: &DeliveryConfig,
    component: Component,
) -> Result<(), Failure> {
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
