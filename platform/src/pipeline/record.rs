//! Phase 4: write each call's result back and release the leases.

use super::deliver::Call;
use super::{Item, Processed};
use crate::db::{error_message, events};
use crate::{log, now_ms};
use hookrelay_core::disposition::Outcome;
use hookrelay_core::metrics::Component;
use hookrelay_core::state::DownstreamResult;
use serde_json::json;
use worker::D1Database;

/// Records every call in one round trip and folds it into `out`. If the
/// write fails the leases expire on their own, and the outcomes still
/// decide the retry.
pub async fn record(
    db: &D1Database,
    items: &[Item<'_>],
    calls: Vec<Call>,
    out: &mut [Processed],
    component: Component,
) {
    let records: Vec<events::DeliveryRecord> = calls
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
    for (i, result) in calls {
        match result {
            Ok(()) => out[i].downstream = DownstreamResult::Delivered,
            Err(f) => {
                out[i].downstream = DownstreamResult::Failed;
                out[i].outcome = Outcome::Failed(f);
            }
        }
    }
}
