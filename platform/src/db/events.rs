//! `events`: one row per idempotency key, with its delivery state and lease.

use super::{changes, int, opt_text, text, Where};
use hookrelay_core::admin_query::{Cursor, EventFilter};
use hookrelay_core::error_code::{ErrorCode, Failure};
use hookrelay_core::queued_event::{EventBody, QueuedEvent};
use hookrelay_core::state::{DeliveryStatus, IngestKind};
use serde::{Deserialize, Serialize};
use worker::{D1Database, D1PreparedStatement, D1Result, Result};

/// The ingest result plus what the pipeline needs next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ingest {
    /// Fresh, duplicate or redelivered.
    pub kind: IngestKind,
    /// The row's delivery status after the ingest.
    pub delivery_status: DeliveryStatus,
}

/// The one statement that ingests an event, in the batch's transaction:
/// insert it, or, for a key already there, count a duplicate only when a
/// *different* queue message carries it (a retry of the same message is
/// not a duplicate delivery). SET expressions read the row as it was, so
/// each `last_message_id IS NOT …` compares against the previous carrier.
/// The `nonce` (one per message batch) stamped on the row and read back by
/// `RETURNING` says which of the two happened; the `counters` rows for
/// `ingest` and `duplicate` are kept by triggers (migration 0007).
pub fn ingest_statement(
    db: &D1Database,
    event: &QueuedEvent,
    queue_message_id: &str,
    initial: DeliveryStatus,
    nonce: &str,
    now_ms: i64,
) -> Result<D1PreparedStatement> {
    let headers = serde_json::to_string(&event.headers)?;
    let (body, body_ref, body_bytes) = match &event.body {
        EventBody::Inline { body } => (Some(body.as_str()), None, body.len() as i64),
        EventBody::Stored {
            body_ref,
            body_bytes,
        } => (None, Some(body_ref.as_str()), *body_bytes as i64),
    };
    db.prepare(
        "INSERT INTO events (idempotency_key, event_id, source, delivery_id, received_at, ingested_at, last_seen_at, duplicate_count, queue_message_id, last_message_id, headers, body, body_ref, body_bytes, delivery_status, ingest_nonce) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, 0, ?7, ?7, ?8, ?9, ?10, ?11, ?12, ?13) \
         ON CONFLICT(idempotency_key) DO UPDATE SET \
           duplicate_count = duplicate_count + (last_message_id IS NOT excluded.last_message_id), \
           duplicate_nonce = CASE WHEN last_message_id IS NOT excluded.last_message_id THEN excluded.ingest_nonce ELSE duplicate_nonce END, \
           last_seen_at = CASE WHEN last_message_id IS NOT excluded.last_message_id THEN excluded.last_seen_at ELSE last_seen_at END, \
           last_message_id = excluded.last_message_id \
         RETURNING ingest_nonce, duplicate_nonce, delivery_status",
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
        text(initial.as_str()),
        text(nonce),
    ])
}

/// Reads the result of one event's [`ingest_statement`] run with `nonce`.
pub fn read_ingest(result: &D1Result, nonce: &str) -> std::result::Result<Ingest, Failure> {
    #[derive(Deserialize)]
    struct Row {
        ingest_nonce: Option<String>,
        duplicate_nonce: Option<String>,
        delivery_status: String,
    }
    let row = result
        .results::<Row>()
        .ok()
        .and_then(|rows| rows.into_iter().next())
        .ok_or_else(|| {
            Failure::new(
                ErrorCode::D1Unavailable,
                "D1 returned no row for an ingest upsert; retrying",
            )
        })?;
    // Checked in this order: a provider's duplicate in the same batch as its
    // first delivery finds the batch's nonce on both columns.
    let kind = if row.duplicate_nonce.as_deref() == Some(nonce) {
        IngestKind::Duplicate
    } else if row.ingest_nonce.as_deref() == Some(nonce) {
        IngestKind::Fresh
    } else {
        IngestKind::Redelivered
    };
    let delivery_status = DeliveryStatus::parse(&row.delivery_status)
        .map_err(|e| Failure::new(ErrorCode::Unknown, e.to_string()))?;
    Ok(Ingest {
        kind,
        delivery_status,
    })
}

/// One statement per event that takes its delivery lease if the event is
/// not delivered and not being delivered by someone else (a lease claimed
/// before `stale_before_ms` is taken over). `changes` = 1 means the lease
/// is ours.
pub fn claim_statements(
    db: &D1Database,
    event_ids: &[&str],
    now_ms: i64,
    stale_before_ms: i64,
) -> Result<Vec<D1PreparedStatement>> {
    let [a, b, c, d] = DeliveryStatus::LEASABLE.map(|s| text(s.as_str()));
    event_ids
        .iter()
        .map(|id| {
            db.prepare(
                "UPDATE events SET delivery_status = ?4, delivery_claimed_at = ?1 WHERE event_id = ?2 \
                 AND (delivery_status IN (?5, ?6, ?7, ?8) OR (delivery_status = ?4 AND delivery_claimed_at < ?3))",
            )
            .bind(&[
                int(now_ms),
                text(id),
                int(stale_before_ms),
                text(DeliveryStatus::Delivering.as_str()),
                a.clone(),
                b.clone(),
                c.clone(),
                d.clone(),
            ])
        })
        .collect()
}

/// Takes the leases of [`claim_statements`] in one round trip; per event,
/// whether this call holds the lease.
pub async fn claim(
    db: &D1Database,
    event_ids: &[&str],
    now_ms: i64,
    stale_before_ms: i64,
) -> Result<Vec<bool>> {
    if event_ids.is_empty() {
        return Ok(Vec::new());
    }
    let stmts = claim_statements(db, event_ids, now_ms, stale_before_ms)?;
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
pub async fn record_deliveries(
    db: &D1Database,
    records: &[DeliveryRecord<'_>],
    now_ms: i64,
) -> Result<()> {
    if records.is_empty() {
        return Ok(());
    }
    db.batch(delivery_statements(db, records, now_ms)?).await?;
    Ok(())
}

/// The statements of [`record_deliveries`], one per record, for a caller
/// that batches them with other writes (the event's steps).
pub fn delivery_statements(
    db: &D1Database,
    records: &[DeliveryRecord<'_>],
    now_ms: i64,
) -> Result<Vec<D1PreparedStatement>> {
    records
        .iter()
        .map(|r| match r.failure {
            None => db
                .prepare("UPDATE events SET delivery_status = ?3, delivered_at = ?2, delivery_attempts = delivery_attempts + 1, delivery_claimed_at = NULL, last_delivery_error = NULL WHERE event_id = ?1")
                .bind(&[text(r.event_id), int(now_ms), text(DeliveryStatus::Delivered.as_str())]),
            Some(f) => db
                .prepare("UPDATE events SET delivery_status = ?2, delivery_attempts = delivery_attempts + 1, delivery_claimed_at = NULL, last_delivery_error = ?3 WHERE event_id = ?1")
                .bind(&[text(r.event_id), text(DeliveryStatus::after_failure(f).as_str()), text(f.code.as_str())]),
        })
        .collect()
}

/// Marks an event whose message was dead-lettered as `failed`, unless it was
/// delivered meanwhile, so "did this webhook arrive?" says it failed.
pub async fn mark_dead_lettered(db: &D1Database, event_id: &str) -> Result<()> {
    db.prepare("UPDATE events SET delivery_status = ?2 WHERE event_id = ?1 AND delivery_status IN (?3, ?4)")
        .bind(&[
            text(event_id),
            text(DeliveryStatus::Failed.as_str()),
            text(DeliveryStatus::Pending.as_str()),
            text(DeliveryStatus::Delivering.as_str()),
        ])?
        .run()
        .await?;
    Ok(())
}

/// An ingested event, as `GET /events` shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EventSummary {
    /// `evt_…`.
    pub event_id: String,
    /// `{source}:{delivery id}`.
    pub idempotency_key: String,
    /// The source.
    pub source: String,
    /// The provider's delivery id, if it gave one.
    pub delivery_id: Option<String>,
    /// When the relay accepted it (unix ms).
    pub received_at: i64,
    /// When it was first ingested.
    pub ingested_at: i64,
    /// When any copy was last seen.
    pub last_seen_at: i64,
    /// Deliveries after the first.
    pub duplicate_count: i64,
    /// Where its downstream delivery stands.
    pub delivery_status: DeliveryStatus,
    /// Downstream calls made.
    pub delivery_attempts: i64,
    /// When the downstream answered 2xx.
    pub delivered_at: Option<i64>,
    /// The code of the last failed call.
    pub last_delivery_error: Option<String>,
}

/// Ingested events newest first, after `cursor`, at most `limit + 1` rows.
pub async fn list(
    db: &D1Database,
    filter: &EventFilter,
    cursor: Option<&Cursor>,
    limit: u32,
) -> Result<Vec<EventSummary>> {
    let mut w = Where::default();
    w.eq("source", filter.source.as_deref())
        .eq("idempotency_key", filter.key.as_deref())
        .eq("delivery_status", filter.delivery_status.as_deref())
        .cmp_int("ingested_at", ">=", filter.since_ms);
    if let Some(c) = cursor {
        w.after("ingested_at, event_id", "<", c.at_ms, text(&c.id));
    }
    let (clause, limit) = w.finish(limit);
    let sql = format!(
        "SELECT event_id, idempotency_key, source, delivery_id, received_at, ingested_at, last_seen_at, duplicate_count, delivery_status, delivery_attempts, delivered_at, last_delivery_error \
         FROM events {clause} ORDER BY ingested_at DESC, event_id DESC LIMIT {limit}"
    );
    db.prepare(sql).bind(&w.params)?.all().await?.results()
}

/// One event as its story shows it: the listing fields plus where it is
/// parked and what carried it (never its body).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EventRow {
    /// The listing fields.
    #[serde(flatten)]
    pub summary: EventSummary,
    /// When it was first parked (unix ms), if it ever was.
    pub parked_at: Option<i64>,
    /// The destination it is parked for.
    pub parked_destination: Option<String>,
    /// The queue message that first carried it.
    pub queue_message_id: Option<String>,
    /// Its body's size in bytes.
    pub body_bytes: i64,
}

/// The event row of one event id (a statement for the story batch).
pub fn story_row(db: &D1Database, event_id: &str) -> Result<D1PreparedStatement> {
    db.prepare(
        "SELECT event_id, idempotency_key, source, delivery_id, received_at, ingested_at, last_seen_at, duplicate_count, delivery_status, delivery_attempts, delivered_at, last_delivery_error, \
         parked_at, parked_destination, queue_message_id, body_bytes FROM events WHERE event_id = ?1",
    )
    .bind(&[text(event_id)])
}

/// Parks a leased event: no call was made, it waits in D1 for its
/// destination's drain. `parked_at` keeps the first time it was parked (the
/// age limit counts from there); a root cause already known is kept, else
/// the breaker's `cause` stands in for it; the lease is released.
pub fn park_statement(
    db: &D1Database,
    event_id: &str,
    destination: &str,
    cause: Option<ErrorCode>,
    now_ms: i64,
) -> Result<D1PreparedStatement> {
    db.prepare(
        "UPDATE events SET delivery_status = ?4, parked_at = COALESCE(parked_at, ?3), parked_destination = ?2, \
         last_delivery_error = COALESCE(last_delivery_error, ?5), delivery_claimed_at = NULL WHERE event_id = ?1 AND delivery_status = ?6",
    )
    .bind(&[
        text(event_id),
        text(destination),
        int(now_ms),
        text(DeliveryStatus::Parked.as_str()),
        opt_text(cause.map(ErrorCode::as_str)),
        text(DeliveryStatus::Delivering.as_str()),
    ])
}

/// A parked event, as a drain reads it back.
#[derive(Debug, Clone, Deserialize)]
pub struct ParkedRow {
    /// `evt_…`.
    pub event_id: String,
    /// `{source}:{delivery id}`.
    pub idempotency_key: String,
    /// The source.
    pub source: String,
    /// The provider's delivery id.
    pub delivery_id: Option<String>,
    /// When the relay accepted it.
    pub received_at: i64,
    /// Redacted request headers, JSON.
    pub headers: String,
    /// The inline body, when not claim-checked.
    pub body: Option<String>,
    /// The `payloads` key, when claim-checked.
    pub body_ref: Option<String>,
    /// The body's size.
    pub body_bytes: i64,
    /// The queue message that first carried it (its attempts are keyed by it).
    pub queue_message_id: Option<String>,
    /// When it was first parked.
    pub parked_at: i64,
    /// The code of its last failed call, or the breaker's cause when parked.
    pub last_delivery_error: Option<String>,
    /// Downstream calls made so far.
    pub delivery_attempts: i64,
}

impl ParkedRow {
    /// The event rebuilt as the queue message that carried it, so a drain
    /// delivers it through the same phases, and a dead letter carries it
    /// whole as its `original`.
    pub fn to_queued_event(&self) -> QueuedEvent {
        let body = match (&self.body, &self.body_ref) {
            (_, Some(body_ref)) => EventBody::Stored {
                body_ref: body_ref.clone(),
                body_bytes: self.body_bytes.max(0) as u64,
            },
            (body, None) => EventBody::Inline {
                body: body.clone().unwrap_or_default(),
            },
        };
        QueuedEvent {
            v: hookrelay_core::queued_event::MESSAGE_VERSION,
            event_id: self.event_id.clone(),
            idempotency_key: self.idempotency_key.clone(),
            source: self.source.clone(),
            delivery_id: self.delivery_id.clone(),
            received_at_ms: self.received_at,
            headers: serde_json::from_str(&self.headers).unwrap_or_default(),
            body,
        }
    }

    /// Its stored last error, when this version can read it.
    pub fn last_error(&self) -> Option<ErrorCode> {
        self.last_delivery_error
            .as_deref()
            .and_then(ErrorCode::parse)
    }
}

const PARKED_COLUMNS: &str = "event_id, idempotency_key, source, delivery_id, received_at, headers, body, body_ref, body_bytes, queue_message_id, parked_at, last_delivery_error, delivery_attempts";

/// The oldest events parked for `destination` (by `parked_at`, then
/// arrival), at most `limit`. An event a crashed drain step left leased
/// before `stale_before_ms` counts as parked again, so none is stuck.
pub async fn oldest_parked(
    db: &D1Database,
    destination: &str,
    stale_before_ms: i64,
    limit: u32,
) -> Result<Vec<ParkedRow>> {
    let sql = format!(
        "SELECT {PARKED_COLUMNS} FROM events WHERE parked_destination = ?1 AND (delivery_status = ?2 OR (delivery_status = ?3 AND delivery_claimed_at < ?4)) \
         ORDER BY parked_at, ingested_at, rowid LIMIT ?5"
    );
    db.prepare(sql)
        .bind(&[
            text(destination),
            text(DeliveryStatus::Parked.as_str()),
            text(DeliveryStatus::Delivering.as_str()),
            int(stale_before_ms),
            int(i64::from(limit)),
        ])?
        .all()
        .await?
        .results()
}

/// Events parked for `destination` since before `parked_before_ms` (over
/// the age limit), oldest first, at most `limit`.
pub async fn over_age(
    db: &D1Database,
    destination: &str,
    parked_before_ms: i64,
    limit: u32,
) -> Result<Vec<ParkedRow>> {
    let sql = format!(
        "SELECT {PARKED_COLUMNS} FROM events WHERE parked_destination = ?1 AND delivery_status = ?2 AND parked_at < ?3 \
         ORDER BY parked_at, ingested_at, rowid LIMIT ?4"
    );
    db.prepare(sql)
        .bind(&[
            text(destination),
            text(DeliveryStatus::Parked.as_str()),
            int(parked_before_ms),
            int(i64::from(limit)),
        ])?
        .all()
        .await?
        .results()
}

/// Takes the delivery lease of a parked event for a drain step (or of one
/// a crashed step left leased before `stale_before_ms`); whether it did.
pub async fn claim_parked(
    db: &D1Database,
    event_id: &str,
    now_ms: i64,
    stale_before_ms: i64,
) -> Result<bool> {
    let result = db
        .prepare(
            "UPDATE events SET delivery_status = ?3, delivery_claimed_at = ?2 WHERE event_id = ?1 \
             AND (delivery_status = ?4 OR (delivery_status = ?3 AND delivery_claimed_at < ?5))",
        )
        .bind(&[
            text(event_id),
            int(now_ms),
            text(DeliveryStatus::Delivering.as_str()),
            text(DeliveryStatus::Parked.as_str()),
            int(stale_before_ms),
        ])?
        .run()
        .await?;
    Ok(changes(&result) > 0)
}

/// Puts a leased event back to `parked` (its destination failed again, or
/// the step stopped before calling it), keeping the failure's code when a
/// call was made.
pub async fn repark(db: &D1Database, event_id: &str, failure: Option<&Failure>) -> Result<()> {
    db.prepare(
        "UPDATE events SET delivery_status = ?2, delivery_claimed_at = NULL, delivery_attempts = delivery_attempts + ?4, \
         last_delivery_error = COALESCE(?5, last_delivery_error) WHERE event_id = ?1 AND delivery_status = ?3",
    )
    .bind(&[
        text(event_id),
        text(DeliveryStatus::Parked.as_str()),
        text(DeliveryStatus::Delivering.as_str()),
        int(i64::from(failure.is_some())),
        opt_text(failure.map(|f| f.code.as_str())),
    ])?
    .run()
    .await?;
    Ok(())
}

/// Marks over-age parked events `failed` once their dead letters are sent.
pub async fn fail_parked(db: &D1Database, event_ids: &[&str]) -> Result<()> {
    let stmts = event_ids
        .iter()
        .map(|id| {
            db.prepare("UPDATE events SET delivery_status = ?2 WHERE event_id = ?1 AND delivery_status = ?3")
                .bind(&[
                    text(id),
                    text(DeliveryStatus::Failed.as_str()),
                    text(DeliveryStatus::Parked.as_str()),
                ])
        })
        .collect::<Result<Vec<_>>>()?;
    if !stmts.is_empty() {
        db.batch(stmts).await?;
    }
    Ok(())
}

/// Parked events in all, and the oldest `parked_at` (for the stats batch).
pub fn parked_total(db: &D1Database) -> Result<D1PreparedStatement> {
    db.prepare(
        "SELECT count(*) AS n, min(parked_at) AS oldest FROM events WHERE delivery_status = ?1",
    )
    .bind(&[text(DeliveryStatus::Parked.as_str())])
}

/// Parked events per destination, with each one's oldest `parked_at` (for
/// the stats batch; callers label the destination before showing it).
pub fn parked_by_destination(db: &D1Database) -> Result<D1PreparedStatement> {
    db.prepare(
        "SELECT parked_destination AS destination, count(*) AS n, min(parked_at) AS oldest FROM events \
         WHERE delivery_status = ?1 GROUP BY parked_destination ORDER BY n DESC LIMIT 100",
    )
    .bind(&[text(DeliveryStatus::Parked.as_str())])
}
