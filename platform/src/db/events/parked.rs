//! An event as a delivery reads it back (`ParkedRow`, rebuilt as the
//! queue message that carried it), and the parked stats (read from
//! `deliveries`, where parking lives since migration 0017; the drain's
//! reads and leases are in `crate::db::deliveries`).

use crate::db::int;
use crate::db::Row;
use hookrelay_core::receive::queued_event::{EventBody, QueuedEvent};
use hookrelay_core::state::error_code::ErrorCode;
use worker::{D1Database, D1PreparedStatement, Result};

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
    pub(crate) fn from_row(r: &Row<'_>) -> Result<Self> {
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
            v: hookrelay_core::receive::queued_event::MESSAGE_VERSION,
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

/// Events first parked per hour since `since` (`k` = hour index,
/// `parked_at / 3600000`), for the stats' hourly series; the partial index
/// `events_by_parked_at` (migration 0011) serves it.
pub fn parked_per_hour(db: &D1Database, since: i64) -> Result<D1PreparedStatement> {
    db.prepare("SELECT parked_at / 3600000 AS k, count(*) AS n FROM deliveries WHERE parked_at >= ?1 GROUP BY k")
        .bind(&[int(since)])
}

/// The oldest event kept (its `ingested_at`), from `events_by_time`.
pub fn oldest_kept(db: &D1Database) -> D1PreparedStatement {
    db.prepare("SELECT min(ingested_at) AS oldest FROM events")
}
