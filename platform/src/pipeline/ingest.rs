//! Phase 1: write every event to D1 in one round trip, with the claim and
//! reads that ride on it (`super::ahead`).

use super::{Item, Processed};
use crate::db::events::ingest_set;
use crate::db::Rows;
use crate::db::{error_message, events};
use hookrelay_core::config::DeliveryConfig;
use hookrelay_core::d1_error::classify_d1_error;
use hookrelay_core::delivery_plan::after_ingest;
use hookrelay_core::disposition::Outcome;
use hookrelay_core::error_code::{ErrorCode, Failure};
use hookrelay_core::ingest_batch::{shape, IngestShape};
use hookrelay_core::state::{DeliveryStatus, DownstreamResult, IngestKind};
use worker::{D1Database, D1PreparedStatement, Result};

fn processed(result: std::result::Result<events::Ingest, Failure>) -> Processed {
    match result {
        Ok(ing) => Processed {
            ingest: Some(ing.kind),
            delivery_status: Some(ing.delivery_status),
            downstream: after_ingest(ing.delivery_status),
            outcome: match ing.kind {
                IngestKind::Fresh => Outcome::Ingested,
                IngestKind::Duplicate | IngestKind::Redelivered => Outcome::Duplicate,
            },
        },
        Err(f) => Processed {
            ingest: None,
            delivery_status: None,
            downstream: DownstreamResult::NotForwarded,
            outcome: Outcome::Failed(f),
        },
    }
}

/// The batch's nonce: stamped on the rows this batch inserts or counts as
/// duplicates, so their `RETURNING` says which happened. Unique per batch.
fn batch_nonce(now_ms: i64) -> String {
    let r = (js_sys::Math::random() * 4_294_967_296.0) as u64;
    format!("{now_ms:x}-{r:08x}")
}

fn statement(
    db: &D1Database,
    item: &Item<'_>,
    cfg: &DeliveryConfig,
    nonce: &str,
    now_ms: i64,
) -> Result<D1PreparedStatement> {
    events::ingest_statement(
        db,
        item.event,
        item.queue_message_id,
        initial(item, cfg),
        nonce,
        now_ms,
    )
}

/// Per item, the ingest's result; and the results of `riders`, when
/// they ran in the ingest's batch.
type Together = (Vec<std::result::Result<events::Ingest, Failure>>, Vec<Rows>);

/// Ingests every item in one D1 batch, with `riders` (statements that
/// read the rows as ingest leaves them, see `super::ahead`) appended to
/// the same batch; their results come back when they ran.
///
/// One set-based statement for the whole batch in the common case. D1 runs
/// a batch as one transaction, so one failing row rolls back all of them. Then each event is tried on its own, so that one bad event
/// never fails the others; that costs a round trip per event, only on the
/// failure path, and the riders do not run.
pub async fn ingest(
    db: &D1Database,
    items: &[Item<'_>],
    cfg: &DeliveryConfig,
    now_ms: i64,
    riders: Vec<D1PreparedStatement>,
) -> (Vec<Processed>, Option<Vec<Rows>>) {
    if items.is_empty() {
        return (Vec::new(), None);
    }
    let nonce = batch_nonce(now_ms);
    let batch_error = match together(db, items, cfg, &nonce, now_ms, riders).await {
        Ok((results, ridden)) => {
            return (results.into_iter().map(processed).collect(), Some(ridden))
        }
        Err(e) => e,
    };
    if items.len() == 1 {
        return (vec![processed(Err(classify_d1_error(&batch_error)))], None);
    }
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        out.push(processed(alone(db, item, cfg, &nonce, now_ms).await));
    }
    (out, None)
}

/// Every item in one D1 batch (one round trip), then `riders`: set-based
/// statements when the keys are distinct, else one statement per event
/// (`hookrelay_core::ingest_batch`); the batch's error text otherwise.
async fn together(
    db: &D1Database,
    items: &[Item<'_>],
    cfg: &DeliveryConfig,
    nonce: &str,
    now_ms: i64,
    riders: Vec<D1PreparedStatement>,
) -> std::result::Result<Together, String> {
    let rows = items
        .iter()
        .map(|i| ingest_set::row_json(i.event, i.queue_message_id, initial(i, cfg)))
        .collect::<Result<Vec<_>>>()
        .map_err(|e| error_message(&e))?;
    let keys: Vec<&str> = items
        .iter()
        .map(|i| i.event.idempotency_key.as_str())
        .collect();
    let sizes: Vec<usize> = rows.iter().map(String::len).collect();
    let IngestShape::Sets(chunks) = shape(&keys, &sizes) else {
        return one_by_one(db, items, cfg, nonce, now_ms, riders).await;
    };
    let statements = chunks
        .iter()
        .map(|c| {
            let chunk: Vec<&str> = rows[c.clone()].iter().map(String::as_str).collect();
            ingest_set::statement(db, &chunk, nonce, now_ms)
        })
        .collect::<Result<Vec<_>>>()
        .map_err(|e| error_message(&e))?;
    let (ingested, ridden) = run_batch(db, statements, riders).await?;
    let mut written = hookrelay_core::vec_map::VecMap::new();
    for result in &ingested {
        written.extend(ingest_set::read(result, nonce).map_err(|e| error_message(&e))?);
    }
    let results = keys
        .iter()
        .map(|k| {
            written.remove(*k).ok_or_else(|| {
                Failure::new(
                    ErrorCode::D1Unavailable,
                    "D1 returned no row for an ingest upsert; retrying",
                )
            })
        })
        .collect();
    Ok((results, ridden))
}

/// Runs the ingest's `statements`, then `riders`, as one batch, and
/// answers the ingest's results apart from the riders'.
async fn run_batch(
    db: &D1Database,
    mut statements: Vec<D1PreparedStatement>,
    riders: Vec<D1PreparedStatement>,
) -> std::result::Result<(Vec<Rows>, Vec<Rows>), String> {
    let ingests = statements.len();
    statements.extend(riders);
    let expected = statements.len();
    let mut results = crate::db::batch(db, statements)
        .await
        .map_err(|e| error_message(&e))?;
    if results.len() != expected {
        return Err("D1 returned a different number of results than statements".into());
    }
    let ridden = results.split_off(ingests);
    Ok((results, ridden))
}

/// One statement per event, in message order, then `riders`, in one batch.
async fn one_by_one(
    db: &D1Database,
    items: &[Item<'_>],
    cfg: &DeliveryConfig,
    nonce: &str,
    now_ms: i64,
    riders: Vec<D1PreparedStatement>,
) -> std::result::Result<Together, String> {
    let statements = items
        .iter()
        .map(|i| statement(db, i, cfg, nonce, now_ms))
        .collect::<Result<Vec<_>>>()
        .map_err(|e| error_message(&e))?;
    let (ingested, ridden) = run_batch(db, statements, riders).await?;
    let results = ingested
        .iter()
        .map(|r| events::read_ingest(r, nonce))
        .collect();
    Ok((results, ridden))
}

fn initial(item: &Item<'_>, cfg: &DeliveryConfig) -> DeliveryStatus {
    DeliveryStatus::initial(cfg.forwards(&item.event.source))
}

async fn alone(
    db: &D1Database,
    item: &Item<'_>,
    cfg: &DeliveryConfig,
    nonce: &str,
    now_ms: i64,
) -> std::result::Result<events::Ingest, Failure> {
    let stmt = statement(db, item, cfg, nonce, now_ms)
        .map_err(|e| classify_d1_error(&error_message(&e)))?;
    let results = crate::db::batch(db, vec![stmt])
        .await
        .map_err(|e| classify_d1_error(&error_message(&e)))?;
    match results.first() {
        Some(r) => events::read_ingest(r, nonce),
        None => Err(classify_d1_error("D1 returned no result for the ingest")),
    }
}
