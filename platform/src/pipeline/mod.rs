//! The two paths every event takes, from the queue consumers and from a
//! replay alike.
//!
//! - [`ingest`]: the `webhooks` consumer's. One round trip writes the
//!   events, routed: each row, one `deliveries` row per matched route, and
//!   the read of the deliveries still pending, whose `deliveries` messages
//!   the caller sends (one more before it, only when a claim-checked body
//!   is read back for a body filter).
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
mod hand_on;
mod ingest;
pub(crate) mod item;
pub mod overdue;
pub mod pull;
mod rate;
pub(crate) mod record;
pub(crate) mod scheduler;

use crate::db::payloads;
use crate::{log, metrics};
use hookrelay_core::deliver::DeliveryConfig;
use hookrelay_core::ingest::claimed_bodies;
use hookrelay_core::metrics::{Component, Metric, MetricName};
use hookrelay_core::parking::Caller;
use hookrelay_core::receive::queued_event::QueuedEvent;
use hookrelay_core::retry::disposition::Outcome;
use hookrelay_core::retry::policy::RetrySchedule;
use hookrelay_core::route::Routed;
use hookrelay_core::state::{DownstreamResult, IngestKind};
use hookrelay_core::support::vec_map::VecMap;
use worker::{D1Database, Env, Queue};

pub use claim::not_configured;
pub use ingest::Pending;
pub use item::{DeliveryItem, Item, Processed};
pub use record::{record_carried, Carrier};

/// Ingests every item in one round trip, routed by `cfg`; answers each
/// item's result and the pending deliveries of the batch's events (or why
/// they cannot be read). An event too large for a queue message is routed
/// with its whole body when a filter reads it: those bodies are read back
/// from D1 first, in one more round trip, only for a batch that has one
/// (`hookrelay_core::ingest::claimed_bodies`). An event whose body could
/// not be read is not ingested: its message is retried. `control` carries
/// the first step of a drain that the copy of a legacy parked event
/// started ([`ingest_routed`]).
pub async fn ingest(
    db: &D1Database,
    items: &[Item<'_>],
    cfg: &DeliveryConfig,
    (component, control): (Component, Option<&Queue>),
    now_ms: i64,
) -> (Vec<Processed>, Result<Vec<Pending>, String>) {
    let read = read_claimed(db, items, cfg, component).await;
    let mut routed: Vec<Routed> = Vec::with_capacity(items.len());
    let mut kept: Vec<Item<'_>> = Vec::with_capacity(items.len());
    let mut out: Vec<Option<Processed>> = Vec::with_capacity(items.len());
    for item in items {
        match claimed_bodies::routing_body(item.event, cfg, &read) {
            Ok(body) => {
                routed.push(route(item.event, body, cfg));
                kept.push(*item);
                out.push(None);
            }
            Err(f) => out.push(Some(Processed::failed(f))),
        }
    }
    let (done, pending) = ingest_routed(
        db,
        &kept,
        &routed,
        (component, control),
        (now_ms, cfg.message_overdue_ms, &cfg.pull_names()),
    )
    .await;
    let mut done = done.into_iter();
    let out = out
        .into_iter()
        .map(|p| {
            p.or_else(|| done.next())
                .unwrap_or_else(Processed::unanswered)
        })
        .collect();
    (out, pending)
}

/// The claim-checked bodies a filter of `items` reads, in one round trip
/// (none when no item needs one). An unreadable D1 reads as none: each
/// such event then fails, and is retried.
async fn read_claimed(
    db: &D1Database,
    items: &[Item<'_>],
    cfg: &DeliveryConfig,
    component: Component,
) -> VecMap<String, String> {
    let refs = claimed_bodies::to_read(items.iter().map(|i| i.event), cfg);
    if refs.is_empty() {
        return VecMap::new();
    }
    payloads::load_many(db, &refs).await.unwrap_or_else(|e| {
        log::warn(
            component,
            "claimed_bodies_unreadable",
            log::fields! {"count": refs.len(), "err": crate::db::error_message(&e)},
        );
        VecMap::new()
    })
}

/// Which routes `event` takes, read with `body` (its whole body, or none
/// when no filter reads it).
fn route(event: &QueuedEvent, body: &str, cfg: &DeliveryConfig) -> Routed {
    let content_type = event.headers.get("content-type").map(String::as_str);
    let headers: Vec<(String, String)> = event
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    cfg.route(&event.source, &headers, body.as_bytes(), content_type)
}

/// As [`ingest`], with the routing given (a replay to one destination
/// routes its event there alone, should its row have to be written again).
///
/// An event from before deliveries is copied into its row here, whoever
/// touches it first (a redelivered message, a replay): a parked one's
/// drain is started by the copy itself (`deliveries::copy_legacy`), and
/// its first step is sent on `control` here, as the backfill does
/// (`crate::parking::park::start_drains`).
pub async fn ingest_routed(
    db: &D1Database,
    items: &[Item<'_>],
    routed: &[Routed],
    (component, control): (Component, Option<&Queue>),
    (now_ms, overdue_ms, pulls): (i64, i64, &[String]),
) -> (Vec<Processed>, Result<Vec<Pending>, String>) {
    let (out, pending, started) =
        ingest::ingest(db, items, routed, (now_ms, overdue_ms, pulls)).await;
    match started {
        Ok(started) => crate::parking::park::start_drains(control, &started, component).await,
        Err(e) => log::warn(
            component,
            "legacy_drains_unread",
            log::fields! {"err": e, "next": "their rows are written; the resume check sends their first steps"},
        ),
    }
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
    (cfg, retry, budget_ms): (&DeliveryConfig, &RetrySchedule, Option<i64>),
    (component, caller): (Component, Caller),
    now_ms: i64,
    control: Option<&Queue>,
) -> Vec<Processed> {
    let claimed = claim::claim(db, requests, (cfg, budget_ms), (caller, component), now_ms).await;
    let mut done = claimed.done;
    if !claimed.leased.is_empty() {
        let (indexes, items): (Vec<usize>, Vec<DeliveryItem>) = claimed.leased.into_iter().unzip();
        let leased_carriers: Vec<Carrier<'_>> = indexes.iter().map(|&i| carriers[i]).collect();
        let calls = deliver::deliver(
            (db, env),
            &items,
            claimed.stored,
            (cfg, budget_ms, claimed.lease.claimed_at),
            (component, caller),
            claimed.destinations,
        )
        .await;
        let mut out: Vec<Processed> = items
            .iter()
            .map(|_| Processed::delivery(DownstreamResult::NotForwarded, Outcome::Duplicate))
            .collect();
        let holder = record::Holder {
            env,
            lease: claimed.lease,
            retry,
            open_action: cfg.breaker_open_action,
            component,
            caller,
        };
        record::record(
            db,
            &holder,
            &items,
            &leased_carriers,
            calls,
            &mut out,
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
            p.unwrap_or(Processed::delivery(
                DownstreamResult::NotForwarded,
                Outcome::Duplicate,
            ))
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
