//! Phase 4: write each call's result back and release the leases; park
//! the events the deliver phase decided to park.

use super::deliver::{Attempt, Call};
use super::{park, Item, Processed};
use crate::db::{error_message, events};
use crate::{log, now_ms};
use hookrelay_core::disposition::Outcome;
use hookrelay_core::error_code::Failure;
use hookrelay_core::metrics::Component;
use hookrelay_core::state::DownstreamResult;
use serde_json::json;
use worker::{D1Database, Queue};

/// Records every call in one round trip and folds it into `out`. If the
/// write fails the leases expire on their own, and the outcomes still
/// decide the retry. Parked events are written by [`park::park`].
pub async fn record(
    db: &D1Database,
    items: &[Item<'_>],
    calls: Vec<Call>,
    out: &mut [Processed],
    component: Component,
    control: Option<&Queue>,
) {
    let (called, parked): (Vec<Call>, Vec<Call>) = calls
        .into_iter()
        .partition(|(_, a)| matches!(a, Attempt::Called(_)));
    let called: Vec<(usize, Result<(), Failure>)> = called
        .into_iter()
        .filter_map(|(i, a)| match a {
            Attempt::Called(r) => Some((i, r)),
            Attempt::Parked { .. } => None,
        })
        .collect();
    write_results(db, items, &called, component).await;
    for (i, result) in called {
        match result {
            Ok(()) => out[i].downstream = DownstreamResult::Delivered,
            Err(f) => {
                out[i].downstream = DownstreamResult::Failed;
                out[i].outcome = Outcome::Failed(f);
            }
        }
    }
    if !parked.is_empty() {
        park::park(db, items, parked, out, component, control).await;
    }
}

async fn write_results(
    db: &D1Database,
    items: &[Item<'_>],
    called: &[(usize, Result<(), Failure>)],
    component: Component,
) {
    let records: Vec<events::DeliveryRecord> = called
        .iter()
        .map(|(i, result)| events::DeliveryRecord {
            event_id: &items[*i].event.event_id,
            failure: result.as_ref().err(),
        })
        .collect();
    if let Err(e) = events::record_deliveries(db, &records, now_ms()).await {
        log::error(
            component,
            "delivery_record_failed",
            json!({"count": records.len(), "err": error_message(&e)}),
        );
    }
}
