//! Phase 1: write every event to D1 in one round trip, routed: its row
//! (with `routed_at`, `routes_unmatched` and its first `delivery_status`),
//! one `deliveries` row per matched route, the copy of an event from
//! before deliveries (`deliveries::copy_legacy`, which starts the drain a
//! parked copy needs), and the read of the deliveries still pending, whose
//! messages the caller then sends.

use super::{Item, Processed};
use crate::db::events::ingest_set;
use crate::db::Rows;
use crate::db::{deliveries, error_message, events};
use hookrelay_core::deliver::overdue::overdue_before;
use hookrelay_core::ingest::batch::{shape, IngestShape};
use hookrelay_core::ingest::delivery_plan::after_ingest;
use hookrelay_core::retry::disposition::Outcome;
use hookrelay_core::route::Routed;
use hookrelay_core::state::error_code::{ErrorCode, Failure};
use hookrelay_core::state::IngestKind;
use hookrelay_core::support::d1_error::classify_d1_error;
use worker::{D1Database, D1PreparedStatement, Result};

fn processed(result: std::result::Result<events::Ingest, Failure>) -> Processed {
    match result {
        Ok(ing) => Processed {
            ingest: Some(ing.kind),
            delivery_status: Some(ing.delivery_status),
            ..Processed::delivery(
                after_ingest(ing.delivery_status),
                match ing.kind {
                    IngestKind::Fresh => Outcome::Ingested,
                    IngestKind::Duplicate | IngestKind::Redelivered => Outcome::Duplicate,
                },
            )
        },
        Err(f) => Processed::failed(f),
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
    routed: &Routed,
    nonce: &str,
    now_ms: i64,
) -> Result<D1PreparedStatement> {
    events::ingest_statement(
        db,
        item.event,
        item.queue_message_id,
        &events::Routing::of(routed, now_ms),
        nonce,
        now_ms,
    )
}

/// Per item, the ingest's result; the results of the routing statements
/// ([`routing`]); and where among them the legacy copy's begin.
type Together = (
    Vec<std::result::Result<events::Ingest, Failure>>,
    Vec<Rows>,
    usize,
);

/// A pending delivery to send: (event id, destination).
pub type Pending = (String, String);

/// The drains the copy of legacy parked events started: (destination,
/// generation) each, whose first step the caller sends; or why their
/// answer is unreadable (their rows are written all the same, and the
/// resume check sends their first steps).
pub type Started = std::result::Result<Vec<(String, i64)>, String>;

/// The routing statements, and where among them the legacy copy's begin.
struct Riders {
    stmts: Vec<D1PreparedStatement>,
    copy_at: usize,
}

/// The statements that follow the upserts in the same transaction: the
/// deliveries of the events ingested fresh, the copy of legacy rows, then
/// the read of every pending delivery of these events.
fn routing(
    db: &D1Database,
    items: &[Item<'_>],
    routed: &[Routed],
    (nonce, overdue_ms, pulls): (&str, i64, &[String]),
    now_ms: i64,
) -> Result<Riders> {
    let mut rows: Vec<(&str, &str)> = Vec::new();
    for (item, r) in items.iter().zip(routed) {
        if let Routed::Routed { matched, .. } = r {
            for d in matched {
                let key = (item.event.event_id.as_str(), d.as_str());
                if !rows.contains(&key) {
                    rows.push(key);
                }
            }
        }
    }
    let ids: Vec<&str> = items.iter().map(|i| i.event.event_id.as_str()).collect();
    let mut stmts = Vec::with_capacity(5);
    if !rows.is_empty() {
        stmts.push(deliveries::insert_routed(
            db,
            &rows,
            (nonce, pulls),
            now_ms,
        )?);
    }
    let copy_at = stmts.len();
    stmts.extend(deliveries::copy_legacy(db, &ids, now_ms)?);
    stmts.push(deliveries::to_send(
        db,
        &ids,
        now_ms,
        (overdue_before(now_ms, overdue_ms), pulls),
    )?);
    Ok(Riders { stmts, copy_at })
}

/// The drains the legacy copy started, from the routing results.
fn started_in(results: &[Rows], copy_at: usize) -> Started {
    deliveries::legacy_drains_started(results, copy_at).map_err(|e| error_message(&e))
}

/// The pending deliveries, from the last of the routing results.
fn pending_in(results: &[Rows]) -> std::result::Result<Vec<Pending>, String> {
    match results.last() {
        Some(r) => deliveries::read_keys(r).map_err(|e| error_message(&e)),
        None => Err("D1 returned fewer results than statements".into()),
    }
}

/// What [`ingest`] answers: each item's result, the pending deliveries of
/// the batch's events (or why they cannot be read), and the drains its
/// copy of legacy parked events started.
pub type Ingested = (
    Vec<Processed>,
    std::result::Result<Vec<Pending>, String>,
    Started,
);

/// Ingests every item, routed as `routed` says (one per item), in one D1
/// batch with its routing statements; answers each item's result and the
/// pending deliveries of the batch's events (whose messages the caller
/// sends), or why they cannot be read (then nothing may be acked as done),
/// and the drains whose first step the caller sends.
///
/// One set-based statement for the whole batch in the common case. D1 runs
/// a batch as one transaction, so one failing row rolls back all of them.
/// Then each event is tried on its own, with its own routing, so that one
/// bad event never fails the others; that costs a round trip per event,
/// only on the failure path.
pub async fn ingest(
    db: &D1Database,
    items: &[Item<'_>],
    routed: &[Routed],
    (now_ms, overdue_ms, pulls): (i64, i64, &[String]),
) -> Ingested {
    if items.is_empty() {
        return (Vec::new(), Ok(Vec::new()), Ok(Vec::new()));
    }
    let nonce = batch_nonce(now_ms);
    let batch_error = match together(db, items, routed, (&nonce, overdue_ms, pulls), now_ms).await {
        Ok((results, ridden, copy_at)) => {
            return (
                results.into_iter().map(processed).collect(),
                pending_in(&ridden),
                started_in(&ridden, copy_at),
            )
        }
        Err(e) => e,
    };
    if items.len() == 1 {
        let failed = processed(Err(classify_d1_error(&batch_error)));
        return (vec![failed], Ok(Vec::new()), Ok(Vec::new()));
    }
    let mut out = Vec::with_capacity(items.len());
    let mut pending = Vec::new();
    let mut started = Ok(Vec::new());
    for (item, r) in items.iter().zip(routed) {
        let (result, more, drains) = alone(db, item, r, (&nonce, overdue_ms, pulls), now_ms).await;
        out.push(processed(result));
        pending.extend(more);
        started = match (started, drains) {
            (Ok(mut all), Ok(more)) => {
                all.extend(more);
                Ok(all)
            }
            (Err(e), _) | (_, Err(e)) => Err(e),
        };
    }
    (out, Ok(pending), started)
}

/// Every item in one D1 batch (one round trip), then `riders`: set-based
/// statements when the keys are distinct, else one statement per event
/// (`hookrelay_core::ingest::batch`); the batch's error text otherwise.
async fn together(
    db: &D1Database,
    items: &[Item<'_>],
    routed: &[Routed],
    (nonce, overdue_ms, pulls): (&str, i64, &[String]),
    now_ms: i64,
) -> std::result::Result<Together, String> {
    let Riders {
        stmts: riders,
        copy_at,
    } = routing(db, items, routed, (nonce, overdue_ms, pulls), now_ms)
        .map_err(|e| error_message(&e))?;
    let rows = items
        .iter()
        .zip(routed)
        .map(|(i, r)| {
            ingest_set::row_json(i.event, i.queue_message_id, &events::Routing::of(r, now_ms))
        })
        .collect::<Result<Vec<_>>>()
        .map_err(|e| error_message(&e))?;
    let keys: Vec<&str> = items
        .iter()
        .map(|i| i.event.idempotency_key.as_str())
        .collect();
    let sizes: Vec<usize> = rows.iter().map(String::len).collect();
    let IngestShape::Sets(chunks) = shape(&keys, &sizes) else {
        let (results, ridden) = one_by_one(db, items, routed, nonce, now_ms, riders).await?;
        return Ok((results, ridden, copy_at));
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
    let mut written = hookrelay_core::support::vec_map::VecMap::new();
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
    Ok((results, ridden, copy_at))
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
    routed: &[Routed],
    nonce: &str,
    now_ms: i64,
    riders: Vec<D1PreparedStatement>,
) -> std::result::Result<(Vec<std::result::Result<events::Ingest, Failure>>, Vec<Rows>), String> {
    let statements = items
        .iter()
        .zip(routed)
        .map(|(i, r)| statement(db, i, r, nonce, now_ms))
        .collect::<Result<Vec<_>>>()
        .map_err(|e| error_message(&e))?;
    let (ingested, ridden) = run_batch(db, statements, riders).await?;
    let results = ingested
        .iter()
        .map(|r| events::read_ingest(r, nonce))
        .collect();
    Ok((results, ridden))
}

/// One event on its own, with its routing: its result and its pending
/// deliveries (none when it failed), and the drains its copy started.
async fn alone(
    db: &D1Database,
    item: &Item<'_>,
    routed: &Routed,
    (nonce, overdue_ms, pulls): (&str, i64, &[String]),
    now_ms: i64,
) -> (
    std::result::Result<events::Ingest, Failure>,
    Vec<Pending>,
    Started,
) {
    let run = async {
        let riders = routing(
            db,
            std::slice::from_ref(item),
            std::slice::from_ref(routed),
            (nonce, overdue_ms, pulls),
            now_ms,
        )?;
        let mut stmts = vec![statement(db, item, routed, nonce, now_ms)?];
        stmts.extend(riders.stmts);
        // The ingest's own statement comes first.
        Ok::<_, worker::Error>((crate::db::batch(db, stmts).await?, riders.copy_at + 1))
    };
    let (results, copy_at) = match run.await {
        Ok(r) => r,
        Err(e) => {
            let failed = classify_d1_error(&error_message(&e));
            return (Err(failed), Vec::new(), Ok(Vec::new()));
        }
    };
    let Some(first) = results.first() else {
        return (
            Err(classify_d1_error("D1 returned no result for the ingest")),
            Vec::new(),
            Ok(Vec::new()),
        );
    };
    let started = started_in(&results, copy_at);
    match (events::read_ingest(first, nonce), pending_in(&results)) {
        (Ok(ing), Ok(pending)) => (Ok(ing), pending, started),
        (Err(f), _) => (Err(f), Vec::new(), started),
        (Ok(_), Err(e)) => (Err(classify_d1_error(&e)), Vec::new(), started),
    }
}
