//! Ingest, then deliver: the path every event takes, from the queue
//! consumer and from a replay alike.
//!
//! Why each step is safe to repeat:
//! - ingest is keyed by idempotency key, so a second run finds its row;
//! - a delivery needs the event's lease (`claim_deliveries`), and a
//!   delivered event is never leased again, so a redelivery, a duplicate
//!   webhook or a replay never calls the downstream twice;
//! - a lease left by a crashed isolate expires, so the event is not stuck.

use crate::breaker_store::{admit_call, record_call};
use crate::d1::error_message;
use crate::event_store::{self, DeliveryRecord, IngestItem, IngestKind};
use crate::{downstream, log, metrics};
use hookrelay_core::breaker::Admission;
use hookrelay_core::classify::classify_d1_error;
use hookrelay_core::config::DeliveryConfig;
use hookrelay_core::delivery_outcome::counts_against_breaker;
use hookrelay_core::disposition::Outcome;
use hookrelay_core::downstream_request::signed_headers;
use hookrelay_core::error_code::{ErrorCode, Failure};
use hookrelay_core::metrics::Metric;
use hookrelay_core::queued_event::{EventBody, QueuedEvent};
use hookrelay_core::redact::destination_label;
use serde_json::json;
use std::collections::HashMap;
use worker::D1Database;

/// One event to process, with the queue message that carries it.
pub struct Item<'a> {
    /// The event.
    pub event: &'a QueuedEvent,
    /// The message id (for a replay, the original message's id).
    pub queue_message_id: &'a str,
}

/// What happened to the downstream delivery of one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// The source has no downstream, or ingest failed first.
    NotForwarded,
    /// It was delivered before; no call was made.
    AlreadyDelivered,
    /// Another isolate holds the delivery lease; no call was made.
    InFlightElsewhere,
    /// Delivered now.
    Delivered,
    /// Not delivered now (the failure is in the outcome).
    Failed,
}

/// The result for one item.
#[derive(Debug, Clone)]
pub struct Processed {
    /// How ingest went, if it succeeded.
    pub ingest: Option<IngestKind>,
    /// How delivery went.
    pub delivery: Delivery,
    /// The outcome for the disposition.
    pub outcome: Outcome,
}

fn outcome_of(kind: IngestKind) -> Outcome {
    match kind {
        IngestKind::Fresh => Outcome::Ingested,
        IngestKind::Duplicate | IngestKind::Redelivered => Outcome::Duplicate,
    }
}

/// Ingests every item in one round trip, then delivers those that forward.
/// `component` labels the counters (`consumer`, or `admin` for a replay).
pub async fn run(
    db: &D1Database,
    items: &[Item<'_>],
    cfg: &DeliveryConfig,
    component: &'static str,
    now_ms: i64,
) -> Vec<Processed> {
    let out = run_uncounted(db, items, cfg, now_ms).await;
    for (item, p) in items.iter().zip(&out) {
        let source = item.event.source.as_str();
        match p.ingest {
            Some(IngestKind::Fresh) => {
                metrics::count(Metric::new("ingest", component).source(source), 1)
            }
            Some(IngestKind::Duplicate) => {
                metrics::count(Metric::new("duplicate", component).source(source), 1)
            }
            _ => {}
        }
        match (&p.delivery, &p.outcome) {
            (Delivery::Delivered, _) => {
                metrics::count(Metric::new("delivered", component).source(source), 1)
            }
            (Delivery::Failed, Outcome::Failed(f)) => metrics::count(
                Metric::new("delivery_failed", component)
                    .source(source)
                    .code(f.code),
                1,
            ),
            _ => {}
        }
    }
    out
}

async fn run_uncounted(
    db: &D1Database,
    items: &[Item<'_>],
    cfg: &DeliveryConfig,
    now_ms: i64,
) -> Vec<Processed> {
    let ingest_items: Vec<IngestItem> = items
        .iter()
        .map(|i| IngestItem {
            event: i.event,
            queue_message_id: i.queue_message_id,
            initial_delivery_status: if cfg.downstreams.contains_key(&i.event.source) {
                "pending"
            } else {
                "none"
            },
        })
        .collect();
    let mut out: Vec<Processed> = event_store::ingest(db, &ingest_items, now_ms)
        .await
        .into_iter()
        .map(|r| match r {
            Ok(ing) => Processed {
                ingest: Some(ing.kind),
                delivery: if ing.delivery_status == "delivered" {
                    Delivery::AlreadyDelivered
                } else {
                    Delivery::NotForwarded
                },
                outcome: outcome_of(ing.kind),
            },
            Err(f) => Processed {
                ingest: None,
                delivery: Delivery::NotForwarded,
                outcome: Outcome::Failed(f),
            },
        })
        .collect();

    let wanted: Vec<usize> = (0..items.len())
        .filter(|&i| {
            out[i].ingest.is_some()
                && out[i].delivery == Delivery::NotForwarded
                && cfg.downstreams.contains_key(&items[i].event.source)
        })
        .collect();
    if wanted.is_empty() {
        return out;
    }
    let ids: Vec<&str> = wanted
        .iter()
        .map(|&i| items[i].event.event_id.as_str())
        .collect();
    let stale_before = now_ms - (cfg.timeout_ms as i64 + 30_000);
    let claimed = match event_store::claim_deliveries(db, &ids, now_ms, stale_before).await {
        Ok(c) => c,
        Err(e) => {
            let failure = classify_d1_error(&error_message(&e));
            for &i in &wanted {
                out[i].outcome = Outcome::Failed(failure.clone());
            }
            return out;
        }
    };
    let mine: Vec<usize> = wanted
        .iter()
        .zip(&claimed)
        .filter_map(|(&i, &c)| if c { Some(i) } else { None })
        .collect();
    for (&i, &c) in wanted.iter().zip(&claimed) {
        if !c {
            out[i].delivery = Delivery::InFlightElsewhere;
        }
    }
    let refs: Vec<&str> = mine
        .iter()
        .filter_map(|&i| match &items[i].event.body {
            EventBody::Stored { body_ref, .. } => Some(body_ref.as_str()),
            EventBody::Inline { .. } => None,
        })
        .collect();
    let stored = event_store::load_payloads(db, &refs)
        .await
        .unwrap_or_default();

    let mut failures: HashMap<usize, Failure> = HashMap::new();
    for &i in &mine {
        let result = deliver_one(db, items[i].event, &stored, cfg, now_ms).await;
        match result {
            Ok(()) => out[i].delivery = Delivery::Delivered,
            Err(f) => {
                out[i].delivery = Delivery::Failed;
                failures.insert(i, f);
            }
        }
    }
    let records: Vec<DeliveryRecord> = mine
        .iter()
        .map(|i| DeliveryRecord {
            event_id: &items[*i].event.event_id,
            failure: failures.get(i),
        })
        .collect();
    if let Err(e) = event_store::record_deliveries(db, &records, now_ms).await {
        // The lease expires on its own; the outcome below still decides the retry.
        log::error(
            "consumer",
            "delivery_record_failed",
            json!({"count": records.len(), "err": error_message(&e)}),
        );
    }
    for (i, f) in failures {
        out[i].outcome = Outcome::Failed(f);
    }
    out
}

async fn deliver_one(
    db: &D1Database,
    event: &QueuedEvent,
    stored: &HashMap<String, String>,
    cfg: &DeliveryConfig,
    now_ms: i64,
) -> Result<(), Failure> {
    let url = &cfg.downstreams[&event.source];
    let body = match &event.body {
        EventBody::Inline { body } => body.as_str(),
        EventBody::Stored { body_ref, .. } => {
            stored.get(body_ref).map(String::as_str).ok_or_else(|| {
                Failure::new(
                    ErrorCode::D1Unavailable,
                    "the claim-checked body could not be loaded from D1",
                )
            })?
        }
    };
    let key = cfg.signing_key.as_ref().ok_or_else(|| {
        Failure::new(
            ErrorCode::Unknown,
            "DOWNSTREAM_SIGNING_SECRET is not configured",
        )
    })?;
    let admission = admit_call(db, url, now_ms, &cfg.breaker)
        .await
        .unwrap_or_else(|e| {
            // Without D1 the breaker cannot be read; fail open rather than stop all delivery.
            log::error(
                "consumer",
                "breaker_unreadable",
                json!({"destination": destination_label(url), "err": error_message(&e)}),
            );
            Admission::Allow
        });
    if let Admission::Reject { retry_at_ms } = admission {
        let wait_s = ((retry_at_ms - now_ms).max(0) as u64).div_ceil(1000);
        return Err(Failure::new(
            ErrorCode::CircuitOpen,
            format!(
                "circuit open for {}; no call made; next probe in about {wait_s}s",
                destination_label(url)
            ),
        ));
    }
    let headers = signed_headers(
        &event.event_id,
        &event.idempotency_key,
        &event.source,
        key,
        now_ms.div_euclid(1000),
        body.as_bytes(),
    );
    let result = downstream::post(url, &headers, body, cfg.timeout_ms, now_ms).await;
    let healthy = match &result {
        Ok(()) => true,
        Err(f) => !counts_against_breaker(f),
    };
    if let Err(e) = record_call(db, url, healthy, now_ms, &cfg.breaker).await {
        log::error(
            "consumer",
            "breaker_unwritable",
            json!({"destination": destination_label(url), "err": error_message(&e)}),
        );
    }
    result
}
