//! Ingest, then deliver: the path every event takes, from the queue
//! consumer and from a replay alike, in four named phases:
//! [`ingest`] → [`claim`] → [`deliver`] → [`record`]. In the common path
//! the claim and the read of the destinations ride in the ingest's own
//! batch ([`ahead`]), so a forwarding batch costs two round trips: that
//! one, then the record after the calls.
//!
//! Why each phase is safe to repeat:
//! - ingest is keyed by idempotency key, so a second run finds its row;
//! - a call needs the event's delivery lease (claim), and a delivered event
//!   is never leased again, so a redelivery, a duplicate webhook or a replay
//!   never calls the downstream twice;
//! - a lease left by a crashed isolate expires, so the event is not stuck.

mod ahead;
pub(crate) mod call;
mod claim;
mod deliver;
mod destination_run;
mod ingest;
pub(crate) mod item;
mod record;

use crate::db::error_message;
use crate::{log, metrics};
use hookrelay_core::config::DeliveryConfig;
use hookrelay_core::delivery_plan::needs_call;
use hookrelay_core::disposition::Outcome;
use hookrelay_core::metrics::{Component, Metric, MetricName};
use hookrelay_core::parking::Caller;
use hookrelay_core::state::{DownstreamResult, IngestKind};
use worker::{D1Database, Queue};

pub use item::{Item, Processed};

/// Ingests every item in one round trip, then delivers those that forward.
/// `component` labels the counters and log lines. This is a replay's run:
/// an operator asked to try now, so an open breaker fails it and nothing
/// parks (`Caller::Replay`).
pub async fn run(
    db: &D1Database,
    items: &[Item<'_>],
    cfg: &DeliveryConfig,
    component: Component,
    now_ms: i64,
) -> Vec<Processed> {
    run_as(db, items, cfg, component, now_ms, Caller::Replay, None).await
}

/// The consumer's run: as [`run`], but with `BREAKER_OPEN_ACTION=park` an
/// event for an unwell destination (or one with a drain running) is parked,
/// and `control` (the `CONTROL` queue) carries its drain's first step.
pub async fn run_parking(
    db: &D1Database,
    items: &[Item<'_>],
    cfg: &DeliveryConfig,
    component: Component,
    now_ms: i64,
    control: Option<&Queue>,
) -> Vec<Processed> {
    run_as(db, items, cfg, component, now_ms, Caller::Consumer, control).await
}

async fn run_as(
    db: &D1Database,
    items: &[Item<'_>],
    cfg: &DeliveryConfig,
    component: Component,
    now_ms: i64,
    caller: Caller,
    control: Option<&Queue>,
) -> Vec<Processed> {
    let ahead = ahead::Ahead::plan(items, cfg, caller);
    let riders = ahead
        .statements(db, cfg, caller, now_ms)
        .unwrap_or_else(|e| {
            // Without riders the claim and reads take their own round trips.
            log::error(
                component,
                "claim_unbindable",
                log::fields! {"err": error_message(&e)},
            );
            Vec::new()
        });
    let (mut out, ridden) = ingest::ingest(db, items, cfg, now_ms, riders).await;
    let wanted: Vec<usize> = (0..items.len())
        .filter(|&i| {
            out[i].ingest.is_some()
                && out[i].delivery_status.is_some_and(|status| {
                    needs_call(status, cfg.forwards(&items[i].event.source), caller)
                })
        })
        .collect();
    let (leased, destinations) = match ridden.filter(|r| !r.is_empty()) {
        Some(results) => {
            let read = ahead.read(&results, component);
            let leased = claim::held(items, &wanted, &mut out, read.leased, component);
            (leased, Some(read.destinations))
        }
        None => {
            let how = (cfg, caller, component);
            let leased = claim::claim(db, items, &wanted, &mut out, how, now_ms).await;
            (leased, None)
        }
    };
    if !leased.is_empty() {
        let calls =
            deliver::deliver(db, items, &leased, cfg, (component, caller), destinations).await;
        record::record(db, items, calls, &mut out, component, control).await;
    }
    count(items, &out, component);
    out
}

fn count(items: &[Item<'_>], out: &[Processed], component: Component) {
    for (item, p) in items.iter().zip(out) {
        let source = item.event.source.as_str();
        let ingest = match p.ingest {
            Some(IngestKind::Fresh) => Some(MetricName::Ingest),
            Some(IngestKind::Duplicate) => Some(MetricName::Duplicate),
            _ => None,
        };
        if let Some(name) = ingest {
            metrics::count(Metric::new(name, component).source(source), 1);
        }
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
