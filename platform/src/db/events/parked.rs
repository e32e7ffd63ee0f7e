//! `events` rows that wait for their destination: parking, the drain's
//! reads and leases, and the parked stats.

use crate::db::{changes, int, opt_text, text};
use crate::db::{Query, Row};
use hookrelay_core::error_code::{ErrorCode, Failure};
use hookrelay_core::queued_event::{EventBody, QueuedEvent};
use hookrelay_core::state::DeliveryStatus;
use worker::{D1Database, D1PreparedStatement, Result};

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
#[derive(Debug, Clone)]
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
    /// One row of a `SELECT {PARKED_COLUMNS}`.
    fn from_row(r: &Row<'_>) -> Result<Self> {
        Ok(ParkedRow {
            event_id: r.text("event_id")?,
            idempotency_key: r.text("idempotency_key")?,
            source: r.text("source")?,
            delivery_id: r.opt_text("delivery_id")?,
            received_at: r.int("received_at")?,
            headers: r.text("headers")?,
            body: r.opt_text("body")?,
            body_ref: r.opt_text("body_ref")?,
            body_bytes: r.int("body_bytes")?,
            queue_message_id: r.opt_text("queue_message_id")?,
            parked_at: r.int("parked_at")?,
            last_delivery_error: r.opt_text("last_delivery_error")?,
            delivery_attempts: r.int("delivery_attempts")?,
        })
    }

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
        .query()
        .await?
        .map(ParkedRow::from_row)
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
        .query()
        .await?
        .map(ParkedRow::from_row)
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
        .query()
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
    .query()
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
        crate::db::batch(db, stmts).await?;
    }
    Ok(())
}

/// Events first parked per hour since `since` (`k` = hour index,
/// `parked_at / 3600000`), for the stats' hourly series; the partial index
/// `events_by_parked_at` (migration 0011) serves it.
pub fn parked_per_hour(db: &D1Database, since: i64) -> Result<D1PreparedStatement> {
    db.prepare("SELECT parked_at / 3600000 AS k, count(*) AS n FROM events WHERE parked_at >= ?1 GROUP BY k")
        .bind(&[int(since)])
}

/// The oldest event kept (its `ingested_at`), from `events_by_time`.
pub fn oldest_kept(db: &D1Database) -> D1PreparedStatement {
    db.prepare("SELECT min(ingested_at) AS oldest FROM events")
}
