//! `deliveries` (migration 0017) as the DLQ worker reads them (a
//! delivery's dead letter closes its row with the one statement both
//! workers use, `super::deliveries::close_dead_lettered`); the events
//! listing and story show each event's deliveries; the stats count parked
//! deliveries and the last hour's outcomes per destination. The relay's
//! reads and writes of the same table live beside its pipeline.

use super::{int, text};
use hookrelay_core::state::DeliveryState;
use hookrelay_core::state::DeliverySummary;
use serde::{Deserialize, Serialize};
use worker::{D1Database, D1PreparedStatement, Result};

/// One delivery, as the events listing and the story show it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeliveryRow {
    /// The event (for a listing page's rows; the story drops it).
    #[serde(skip_serializing)]
    pub event_id: String,
    /// The destination's name.
    pub destination: String,
    /// pending | delivering | delivered | parked | dead_lettered.
    pub state: String,
    /// Calls made to the destination.
    pub attempts: i64,
    /// When it was delivered (unix ms).
    pub delivered_at: Option<i64>,
    /// The stable code of its last failed call.
    pub last_error: Option<String>,
    /// When it was first parked (unix ms).
    pub parked_at: Option<i64>,
    /// Why it is parked: breaker | drain | rate | auth.
    pub park_cause: Option<String>,
    /// Its last change (unix ms).
    pub updated_at: i64,
}

const COLUMNS: &str =
    "event_id, destination, state, attempts, delivered_at, last_error, parked_at, park_cause, updated_at";

/// The deliveries of the events `page` selects (a listing page's
/// `SELECT event_id FROM events …`, bound with `params`), in the same batch
/// as the page itself.
pub fn for_page(
    db: &D1Database,
    page: &str,
    params: &[wasm_bindgen::JsValue],
) -> Result<D1PreparedStatement> {
    db.prepare(format!(
        "SELECT {COLUMNS} FROM deliveries WHERE event_id IN ({page}) ORDER BY event_id, destination"
    ))
    .bind(params)
}

/// The deliveries of one event (a statement for its story).
pub fn for_event(db: &D1Database, event_id: &str) -> Result<D1PreparedStatement> {
    db.prepare(format!(
        "SELECT {COLUMNS} FROM deliveries WHERE event_id = ?1 ORDER BY destination"
    ))
    .bind(&[text(event_id)])
}

/// Parked deliveries in all (count, oldest `parked_at`): the rows and the
/// legacy parked events, as [`parked_by_destination`] counts them.
pub fn parked_total(db: &D1Database) -> Result<D1PreparedStatement> {
    db.prepare(
        "SELECT sum(n) AS n, min(oldest) AS oldest FROM ( \
           SELECT count(*) AS n, min(parked_at) AS oldest FROM deliveries WHERE state = ?1 \
           UNION ALL \
           SELECT count(*) AS n, min(parked_at) AS oldest FROM events WHERE delivery_status = ?2 AND routed_at IS NULL)",
    )
    .bind(&[
        text(DeliveryState::Parked.as_str()),
        text(DeliverySummary::Parked.as_str()),
    ])
}

/// Parked deliveries per destination (count, oldest `parked_at`): the
/// `deliveries` rows, plus the events from before deliveries existed
/// (`routed_at IS NULL`), each read as its source's destination. At most
/// 100 destinations, the most parked first.
pub fn parked_by_destination(db: &D1Database) -> Result<D1PreparedStatement> {
    db.prepare(
        "SELECT destination, sum(n) AS n, min(oldest) AS oldest FROM ( \
           SELECT destination, count(*) AS n, min(parked_at) AS oldest FROM deliveries WHERE state = ?1 GROUP BY destination \
           UNION ALL \
           SELECT source AS destination, count(*) AS n, min(parked_at) AS oldest FROM events \
             WHERE delivery_status = ?2 AND routed_at IS NULL GROUP BY source) \
         GROUP BY destination ORDER BY n DESC, destination LIMIT 100",
    )
    .bind(&[
        text(DeliveryState::Parked.as_str()),
        text(DeliverySummary::Parked.as_str()),
    ])
}

/// Per destination, the deliveries whose last change falls after `since`
/// (`n`) and how many of those were delivered and dead-lettered. The
/// destinations are walked one by one over `deliveries_by_destination_time`
/// (a loose index scan), so the cost is the destinations plus the hour's
/// rows, never the whole table.
pub fn last_hour_by_destination(db: &D1Database, since: i64) -> Result<D1PreparedStatement> {
    db.prepare(
        "WITH RECURSIVE d(name) AS ( \
           SELECT min(destination) FROM deliveries \
           UNION ALL SELECT (SELECT min(destination) FROM deliveries WHERE destination > d.name) FROM d WHERE d.name IS NOT NULL) \
         SELECT d.name AS destination, count(x.destination) AS n, \
           coalesce(sum(x.state = ?2), 0) AS delivered, coalesce(sum(x.state = ?3), 0) AS dead_lettered \
         FROM d LEFT JOIN deliveries x ON x.destination = d.name AND x.updated_at >= ?1 \
         WHERE d.name IS NOT NULL GROUP BY d.name ORDER BY d.name LIMIT 100",
    )
    .bind(&[
        int(since),
        text(DeliveryState::Delivered.as_str()),
        text(DeliveryState::DeadLettered.as_str()),
    ])
}
