//! Phase 1: write every event to D1 in one round trip.

use super::{Item, Processed};
use crate::db::{error_message, events};
use hookrelay_core::config::DeliveryConfig;
use hookrelay_core::d1_error::classify_d1_error;
use hookrelay_core::delivery_plan::after_ingest;
use hookrelay_core::disposition::Outcome;
use hookrelay_core::error_code::Failure;
use hookrelay_core::state::{DeliveryStatus, DownstreamResult, IngestKind};
use worker::{D1Database, D1PreparedStatement, Result};

fn processed(result: std::result::Result<events::Ingest, Failure>) -> Processed {
    match result {
        Ok(ing) => Processed {
            ingest: Some(ing.kind),
            downstream: after_ingest(ing.delivery_status),
            outcome: match ing.kind {
                IngestKind::Fresh => Outcome::Ingested,
                IngestKind::Duplicate | IngestKind::Redelivered => Outcome::Duplicate,
            },
        },
        Err(f) => Processed {
            ingest: None,
            downstream: DownstreamResult::NotForwarded,
            outcome: Outcome::Failed(f),
        },
    }
}

fn statements(
    db: &D1Database,
    item: &Item<'_>,
    cfg: &DeliveryConfig,
    now_ms: i64,
) -> Result<Vec<D1PreparedStatement>> {
    let initial = DeliveryStatus::initial(cfg.forwards(&item.event.source));
    events::ingest_statements(db, item.event, item.queue_message_id, initial, now_ms)
}

/// Ingests every item in one D1 batch.
///
/// D1 runs a batch as one transaction, so one failing statement rolls back
/// all of them. Then each event is tried on its own, so that one bad event
/// never fails the others; that costs a round trip per event, only on the
/// failure path.
pub async fn ingest(
    db: &D1Database,
    items: &[Item<'_>],
    cfg: &DeliveryConfig,
    now_ms: i64,
) -> Vec<Processed> {
    if items.is_empty() {
        return Vec::new();
    }
    let batch_error = match together(db, items, cfg, now_ms).await {
        Ok(results) => return results.into_iter().map(processed).collect(),
        Err(e) => e,
    };
    if items.len() == 1 {
        return vec![processed(Err(classify_d1_error(&batch_error)))];
    }
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        out.push(processed(alone(db, item, cfg, now_ms).await));
    }
    out
}

/// Every item's statements in one batch; the batch's error text otherwise.
async fn together(
    db: &D1Database,
    items: &[Item<'_>],
    cfg: &DeliveryConfig,
    now_ms: i64,
) -> std::result::Result<Vec<std::result::Result<events::Ingest, Failure>>, String> {
    let per_item = items
        .iter()
        .map(|i| statements(db, i, cfg, now_ms))
        .collect::<Result<Vec<_>>>()
        .map_err(|e| error_message(&e))?;
    let counts: Vec<usize> = per_item.iter().map(Vec::len).collect();
    let results = db
        .batch(per_item.into_iter().flatten().collect())
        .await
        .map_err(|e| error_message(&e))?;
    if results.len() != counts.iter().sum::<usize>() {
        return Err("D1 returned a different number of results than statements".into());
    }
    let mut rest = results.as_slice();
    Ok(counts
        .iter()
        .map(|&n| {
            let (mine, tail) = rest.split_at(n);
            rest = tail;
            events::read_ingest(mine)
        })
        .collect())
}

async fn alone(
    db: &D1Database,
    item: &Item<'_>,
    cfg: &DeliveryConfig,
    now_ms: i64,
) -> std::result::Result<events::Ingest, Failure> {
    let stmts =
        statements(db, item, cfg, now_ms).map_err(|e| classify_d1_error(&error_message(&e)))?;
    let results = db
        .batch(stmts)
        .await
        .map_err(|e| classify_d1_error(&error_message(&e)))?;
    events::read_ingest(&results)
}
