//! D1 statements for events: claim-checked payloads, exactly-once ingest,
//! delivery leases and results, and the failed-attempt record.

use crate::d1::{error_message, int, opt_text, text};
use hookrelay_core::classify::classify_d1_error;
use hookrelay_core::error_code::Failure;
use hookrelay_core::queued_event::{EventBody, QueuedEvent};
use serde::Deserialize;
use std::collections::HashMap;
use worker::{D1Database, D1PreparedStatement, D1Result, Result};

/// Stores a body too large for a queue message, keyed by event id. A
/// repeated delivery of the same event finds the row already there.
pub async fn store_payload(
    db: &D1Database,
    event_id: &str,
    source: &str,
    body: &str,
    now_ms: i64,
) -> Result<()> {
    db.prepare("INSERT INTO payloads (event_id, source, body, body_bytes, created_at) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(event_id) DO NOTHING")
        .bind(&[text(event_id), text(source), text(body), int(body.len() as i64), int(now_ms)])?
        .run()
        .await?;
    Ok(())
}

/// Claim-checked bodies by event id, in one round trip.
pub async fn load_payloads(db: &D1Database, event_ids: &[&str]) -> Result<HashMap<String, String>> {
    if event_ids.is_empty() {
        return Ok(HashMap::new());
    }
    #[derive(Deserialize)]
    struct Row {
        event_id: String,
        body: String,
    }
    let stmts = event_ids
        .iter()
        .map(|id| {
            db.prepare("SELECT event_id, body FROM payloads WHERE event_id = ?1")
                .bind(&[text(id)])
        })
        .collect::<Result<Vec<_>>>()?;
    let mut out = HashMap::new();
    for result in db.batch(stmts).await? {
        for row in result.results::<Row>()? {
            out.insert(row.event_id, row.body);
        }
    }
    Ok(out)
}

/// How an ingest went for one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IngestKind {
    /// First time this idempotency key was seen.
    Fresh,
    /// A different delivery of an event already ingested: counted.
    Duplicate,
    /// The same queue message again (a retry after a later step failed).
    Redelivered,
}

/// The ingest result plus what the consumer needs next.
#[derive(Debug, Clone)]
pub struct Ingest {
    /// Fresh, duplicate or redelivered.
    pub kind: IngestKind,
    /// `none`, `pending`, `delivering`, `delivered` or `failed`.
    pub delivery_status: String,
}

/// Two or three statements per event, all in the batch's one transaction:
/// 1. insert if new (`changes` = 1 means fresh);
/// 2. count a duplicate only when a *different* queue message carries the
///    key, so a retry of the same message is not a duplicate delivery;
/// 3. for a source that forwards, read the delivery status (a source
///    without a downstream has nothing to read, so it skips this step).
fn ingest_statements(
    db: &D1Database,
    event: &QueuedEvent,
    queue_message_id: &str,
    delivery_status: &str,
    now_ms: i64,
) -> Result<Vec<D1PreparedStatement>> {
    let headers = serde_json::to_string(&event.headers)?;
    let (body, body_ref, body_bytes) = match &event.body {
        EventBody::Inline { body } => (Some(body.as_str()), None, body.len() as i64),
        EventBody::Stored {
            body_ref,
            body_bytes,
        } => (None, Some(body_ref.as_str()), *body_bytes as i64),
    };
    let insert = db
        .prepare(
            "INSERT INTO events (idempotency_key, event_id, source, delivery_id, received_at, ingested_at, last_seen_at, duplicate_count, queue_message_id, last_message_id, headers, body, body_ref, body_bytes, delivery_status) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, 0, ?7, ?7, ?8, ?9, ?10, ?11, ?12) ON CONFLICT(idempotency_key) DO NOTHING",
        )
        .bind(&[
            text(&event.idempotency_key),
            text(&event.event_id),
            text(&event.source),
            opt_text(event.delivery_id.as_deref()),
            int(event.received_at_ms),
            int(now_ms),
            text(queue_message_id),
            text(&headers),
            opt_text(body),
            opt_text(body_ref),
            int(body_bytes),
            text(delivery_status),
        ])?;
    let duplicate = db
        .prepare("UPDATE events SET duplicate_count = duplicate_count + 1, last_message_id = ?2, last_seen_at = ?3 WHERE idempotency_key = ?1 AND last_message_id IS NOT ?2")
        .bind(&[text(&event.idempotency_key), text(queue_message_id), int(now_ms)])?;
    let mut statements = vec![insert, duplicate];
    if delivery_status == "pending" {
        statements.push(
            db.prepare("SELECT delivery_status FROM events WHERE idempotency_key = ?1")
                .bind(&[text(&event.idempotency_key)])?,
        );
    }
    Ok(statements)
}

fn changes(result: &D1Result) -> usize {
    result
        .meta()
        .ok()
        .flatten()
        .and_then(|m| m.changes)
        .unwrap_or(0)
}

fn read_ingest(results: &[D1Result]) -> std::result::Result<Ingest, Failure> {
    #[derive(Deserialize)]
    struct Status {
        delivery_status: String,
    }
    let (insert, duplicate, status) = match results {
        [insert, duplicate] => (insert, duplicate, None),
        [insert, duplicate, status] => (insert, duplicate, Some(status)),
        _ => {
            return Err(classify_d1_error(
                "D1 returned a different number of results than statements",
            ))
        }
    };
    let kind = if changes(insert) > 0 {
        IngestKind::Fresh
    } else if changes(duplicate) > 0 {
        IngestKind::Duplicate
    } else {
        IngestKind::Redelivered
    };
    let delivery_status = status
        .and_then(|s| s.results::<Status>().ok())
        .and_then(|rows| rows.into_iter().next())
        .map_or_else(|| "none".to_string(), |s| s.delivery_status);
    Ok(Ingest {
        kind,
        delivery_status,
    })
}

/// One event to ingest: the event, the queue message carrying it, and the
/// delivery status a fresh row starts with (`pending` when it forwards).
pub struct IngestItem<'a> {
    /// The event.
    pub event: &'a QueuedEvent,
    /// Its queue message id.
    pub queue_message_id: &'a str,
    /// `pending` or `none`.
    pub initial_delivery_status: &'static str,
}

/// Ingests every item in one D1 round trip.
///
/// D1 runs a batch as one transaction, so one failing statement rolls back
/// all of them. Then each event is tried on its own, so that one bad event
/// never fails the others; that costs a round trip per event, only on the
/// failure path.
pub async fn ingest(
    db: &D1Database,
    items: &[IngestItem<'_>],
    now_ms: i64,
) -> Vec<std::result::Result<Ingest, Failure>> {
    if items.is_empty() {
        return Vec::new();
    }
    let statements: Result<Vec<Vec<D1PreparedStatement>>> = items
        .iter()
        .map(|i| {
            ingest_statements(
                db,
                i.event,
                i.queue_message_id,
                i.initial_delivery_status,
                now_ms,
            )
        })
        .collect();
    let batch_error = match statements {
        Ok(per_item) => {
            let counts: Vec<usize> = per_item.iter().map(Vec::len).collect();
            match db.batch(per_item.into_iter().flatten().collect()).await {
                Ok(results) if results.len() == counts.iter().sum::<usize>() => {
                    let mut rest = results.as_slice();
                    return counts
                        .iter()
                        .map(|&n| {
                            let (mine, tail) = rest.split_at(n);
                            rest = tail;
                            read_ingest(mine)
                        })
                        .collect();
                }
                Ok(_) => "D1 returned a different number of results than statements".to_string(),
                Err(e) => error_message(&e),
            }
        }
        Err(e) => error_message(&e),
    };
    if items.len() == 1 {
        return vec![Err(classify_d1_error(&batch_error))];
    }
    let mut out = Vec::with_capacity(items.len());
    for i in items {
        let one = match ingest_statements(
            db,
            i.event,
            i.queue_message_id,
            i.initial_delivery_status,
            now_ms,
        ) {
            Ok(stmts) => match db.batch(stmts).await {
                Ok(results) => read_ingest(&results),
                Err(e) => Err(classify_d1_error(&error_message(&e))),
            },
            Err(e) => Err(classify_d1_error(&error_message(&e))),
        };
        out.push(one);
    }
    out
}

/// Takes the delivery lease of each event that is not delivered and not
/// being delivered by someone else (a lease older than `stale_before_ms` is
/// taken over). Returns, per event id, whether this call holds the lease.
pub async fn claim_deliveries(
    db: &D1Database,
    event_ids: &[&str],
    now_ms: i64,
    stale_before_ms: i64,
) -> Result<Vec<bool>> {
    if event_ids.is_empty() {
        return Ok(Vec::new());
    }
    let stmts = event_ids
        .iter()
        .map(|id| {
            db.prepare(
                "UPDATE events SET delivery_status = 'delivering', delivery_claimed_at = ?1 WHERE event_id = ?2 \
                 AND (delivery_status IN ('none', 'pending', 'failed') OR (delivery_status = 'delivering' AND delivery_claimed_at < ?3))",
            )
            .bind(&[int(now_ms), text(id), int(stale_before_ms)])
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(db
        .batch(stmts)
        .await?
        .iter()
        .map(|r| changes(r) > 0)
        .collect())
}

/// The result of one delivery attempt, to be written back.
pub struct DeliveryRecord<'a> {
    /// The event.
    pub event_id: &'a str,
    /// `None` when delivered, else the failure.
    pub failure: Option<&'a Failure>,
}

/// Writes delivery results and releases the leases, in one round trip.
/// A poison failure leaves the event `failed`; any other, `pending`.
pub async fn record_deliveries(
    db: &D1Database,
    records: &[DeliveryRecord<'_>],
    now_ms: i64,
) -> Result<()> {
    if records.is_empty() {
        return Ok(());
    }
    let stmts = records
        .iter()
        .map(|r| match r.failure {
            None => db
                .prepare("UPDATE events SET delivery_status = 'delivered', delivered_at = ?2, delivery_attempts = delivery_attempts + 1, delivery_claimed_at = NULL, last_delivery_error = NULL WHERE event_id = ?1")
                .bind(&[text(r.event_id), int(now_ms)]),
            Some(f) => {
                let status = if f.class() == hookrelay_core::error_code::FailureClass::Poison { "failed" } else { "pending" };
                db.prepare("UPDATE events SET delivery_status = ?2, delivery_attempts = delivery_attempts + 1, delivery_claimed_at = NULL, last_delivery_error = ?3 WHERE event_id = ?1")
                    .bind(&[text(r.event_id), text(status), text(f.code.as_str())])
            }
        })
        .collect::<Result<Vec<_>>>()?;
    db.batch(stmts).await?;
    Ok(())
}

/// One failed attempt, as recorded for the DLQ worker's envelope.
pub struct FailedAttempt<'a> {
    /// The event id, when the message names one.
    pub event_id: Option<&'a str>,
    /// The queue message id.
    pub queue_message_id: &'a str,
    /// The platform attempt number.
    pub attempt: u32,
    /// What failed.
    pub failure: &'a Failure,
}

/// Records failed attempts in one round trip.
pub async fn record_attempts(
    db: &D1Database,
    attempts: &[FailedAttempt<'_>],
    now_ms: i64,
) -> Result<()> {
    if attempts.is_empty() {
        return Ok(());
    }
    let stmt = "INSERT INTO attempts (event_id, queue_message_id, attempt, class, code, message, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
    let statements = attempts
        .iter()
        .map(|a| {
            db.prepare(stmt).bind(&[
                opt_text(a.event_id),
                text(a.queue_message_id),
                int(i64::from(a.attempt)),
                text(a.failure.class().as_str()),
                text(a.failure.code.as_str()),
                text(&a.failure.message),
                int(now_ms),
            ])
        })
        .collect::<Result<Vec<_>>>()?;
    db.batch(statements).await?;
    Ok(())
}

/// Adds `by` to a named counter (statement, for batching with other writes).
pub fn bump_counter(db: &D1Database, name: &str, by: i64) -> Result<D1PreparedStatement> {
    db.prepare("INSERT INTO counters (name, value) VALUES (?1, ?2) ON CONFLICT(name) DO UPDATE SET value = value + excluded.value")
        .bind(&[text(name), int(by)])
}
