//! The two paths every event takes, from the queue consumers and from a
//! replay alike.
//!
//! - [`ingest`]: the `webhooks` consumer's. One round trip writes the
//!   events, routed: each row, one `deliveries` row per matched route, and
//!   the read of the deliveries still pending, whose `deliveries` messages
//!   the caller sends.
//! - [`deliver`]: the `deliveries` consumer's (and a replay's to one
//!   destination), in three named phases: [`claim`] (the leases, the
//!   events, the bodies, the breakers and drains, in one round trip) →
//!   [`deliver`] (the rated destinations' starts in one more round trip,
//!   `rate`; then the calls, per destination behind its breaker) →
//!   [`record`] (every outcome, attempt and summary, in one round trip).
//!
//! Why each phase is safe to repeat:
//! - ingest is keyed by idempotency key, and a delivery by (event,
//!   destination), so a second run finds its rows;
//! - a call needs its delivery's lease, and a delivered one is never
//!   leased again, so a redelivery, a duplicate webhook, a replay or a
//!   drain never calls a destination twice for one event;
//! - a lease left by a crashed isolate expires, so a delivery is not stuck.

pub(crate) mod call;
mod claim;
mod deliver;
mod destination_run;
mod ingest;
pub(crate) mod item;
mod rate;
mod record;

use crate::{log, metrics};
use hookrelay_core::deliver::DeliveryConfig;
use hookrelay_core::metrics::{Component, Metric, MetricName};
use hookrelay_core::parking::Caller;
use hookrelay_core::retry::disposition::Outcome;
use hookrelay_core::route::Routed;
use hookrelay_core::state::{DownstreamResult, IngestKind};
use worker::{D1Database, Env, Queue};

pub use claim::not_configured;
pub use ingest::Pending;
pub use item::{DeliveryItem, Item, Processed};
pub use record::Carrier;

/// Ingests every item in one round trip, routed by `cfg`; answers each
/// item's result and the pending deliveries of the batch's events (or why
/// they cannot be read).
pub async fn ingest(
    db: &D1Database,
    items: &[Item<'_>],
    cfg: &DeliveryConfig,
    component: Component,
    now_ms: i64,
) -> (Vec<Processed>, Result<Vec<Pending>, String>) {
    let routed: Vec<Routed> = items
        .iter()
        .map(|i| {
            let e = i.event;
            let content_type = e.headers.get("content-type").map(String::as_str);
            let headers: Vec<(String, String)> = e
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            // A claim-checked body (over a queue message's size) is not in
            // the message: its filters see no body (README, "Routes").
            let body = e.inline_body().unwrap_or("").as_bytes();
            cfg.route(&e.source, &headers, body, content_type)
        })
        .collect();
    ingest_routed(db, items, &routed, component, now_ms).await
}

/// As [`ingest`], with the routing given (a replay to one destination
/// routes its event there alone, should its row have to be written again).
pub async fn ingest_routed(
    db: &D1Database,
    items: &[Item<'_>],
    routed: &[Routed],
    component: Component,
    now_ms: i64,
) -> (Vec<Processed>, Result<Vec<Pending>, String>) {
    let (out, pending) = ingest::ingest(db, items, routed, now_ms).await;
    for ((item, p), r) in items.iter().zip(&out).zip(routed) {
        let source = item.event.source.as_str();
        let name = match p.ingest {
            Some(IngestKind::Fresh) => Some(MetricName::Ingest),
            Some(IngestKind::Duplicate) => Some(MetricName::Duplicate),
            _ => None,
        };
        if let Some(name) = name {
            metrics::count(Metric::new(name, component).source(source), 1);
        }
        if p.ingest == Some(IngestKind::Fresh)
            && matches!(r, Routed::Routed { matched, .. } if matched.is_empty())
        {
            metrics::count(
                Metric::new(MetricName::Filtered, component).source(source),
                1,
            );
            log::info(
                component,
                "filtered",
                log::fields! {"id": item.event.event_id, "source": source},
            );
        }
    }
    (out, pending)
}

/// Delivers `requests` (event id, destination), each carried by the
/// message `carriers` names (same order), as `caller` (`env` holds the
/// bindings a destination may be reached through): claim, calls,
/// record, in two round trips (plus one reservation for the rated
/// destinations, the breakers' writes, and a park's).
/// An open breaker parks a consumer's delivery (with
/// `BREAKER_OPEN_ACTION=park`, `control` carrying its drain's first
/// step); a replay's fails instead.
#[allow(clippy::too_many_arguments)]
pub async fn deliver(
    (db, env): (&D1Database, &Env),
    requests: &[(String, String)],
    carriers: &[Carrier<'_>],
    cfg: &DeliveryConfig,
    (component, caller): (Component, Caller),
    now_ms: i64,
    control: Option<&Queue>,
) -> Vec<Processed> {
    let claimed = claim::claim(db, requests, cfg, (caller, component), now_ms).await;
    let mut done = claimed.done;
    if !claimed.leased.is_empty() {
        let (indexes, items): (Vec<usize>, Vec<DeliveryItem>) = claimed.leased.into_iter().unzip();
        let leased_carriers: Vec<Carrier<'_>> = indexes.iter().map(|&i| carriers[i]).collect();
        let calls = deliver::deliver(
            (db, env),
            &items,
            claimed.stored,
            cfg,
            (component, caller),
            claimed.destinations,
        )
        .await;
        let mut out: Vec<Processed> = items
            .iter()
            .map(|_| Processed {
                ingest: None,
                delivery_status: None,
                downstream: DownstreamResult::NotForwarded,
                outcome: Outcome::Duplicate,
            })
            .collect();
        record::record(
            db,
            &items,
            &leased_carriers,
            calls,
            &mut out,
            (component, caller),
            control,
        )
        .await;
        count(&items, &out, component);
        for (i, p) in indexes.into_iter().zip(out) {
            done[i] = Some(p);
        }
    }
    done.into_iter()
        .map(|p| {
            p.unwrap_or(Processed {
                ingest: None,
                delivery_status: None,
                downstream: DownstreamResult::NotForwarded,
                outcome: Outcome::Duplicate,
            })
        })
        .collect()
}

fn count(items: &[DeliveryItem], out: &[Processed], component: Component) {
    for (item, p) in items.iter().zip(out) {
        let source = item.event.source.as_str();
        match (p.downstream, &p.outcome) {
            (DownstreamResult::Delivered, _) => metrics::count(
                Metric::new(MetricName::Delivered, component).source(source),
                1,
            ),
            (DownstreamResult::Failed, Outcome::Failed(f)) => metrics::count(
                Metric::new(MetricName::DeliveryFailed, component)
                    .source(source)
                    .code(f.code),
                1,
            ),
            _ => {}
        }
    }
}
