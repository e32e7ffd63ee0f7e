//! `events` as the admin API reads it: the listing (each event with its
//! deliveries) and one event's row.

use crate::db::delivery_rows::DeliveryRow;
use crate::db::{text, Where};
use hookrelay_core::admin::query::{Cursor, EventFilter};
use hookrelay_core::state::DeliverySummary;
use hookrelay_core::support::redact::redact_map;
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;
use worker::{D1Database, D1PreparedStatement, Result};

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
    pub delivery_status: DeliverySummary,
    /// Downstream calls made.
    pub delivery_attempts: i64,
    /// When the downstream answered 2xx.
    pub delivered_at: Option<i64>,
    /// The code of the last failed call.
    pub last_delivery_error: Option<String>,
    /// When its routes were evaluated; null for an event from before
    /// deliveries existed (read as one legacy delivery).
    pub routed_at: Option<i64>,
    /// Its deliveries, one per matching route (filled in after the read).
    #[serde(default, skip_deserializing)]
    pub deliveries: Vec<DeliveryRow>,
}

const SUMMARY_COLUMNS: &str = "event_id, idempotency_key, source, delivery_id, received_at, ingested_at, last_seen_at, duplicate_count, delivery_status, delivery_attempts, delivered_at, last_delivery_error, routed_at";

impl EventSummary {
    /// Gives the event its deliveries: its rows, or for an event from
    /// before deliveries existed, its one legacy delivery
    /// (`hookrelay_core::deliver::deliveries::legacy`).
    pub fn with_deliveries(mut self, rows: &[DeliveryRow]) -> EventSummary {
        self.deliveries = match self.routed_at {
            Some(_) => rows
                .iter()
                .filter(|d| d.event_id == self.event_id)
                .cloned()
                .collect(),
            None => self.legacy_delivery().into_iter().collect(),
        };
        self
    }

    fn legacy_delivery(&self) -> Option<DeliveryRow> {
        let (destination, state) = hookrelay_core::deliver::deliveries::legacy::legacy_delivery(
            &self.source,
            self.delivery_status.as_str(),
        )?;
        Some(DeliveryRow {
            event_id: self.event_id.clone(),
            destination,
            state: state.as_str().to_string(),
            attempts: self.delivery_attempts,
            delivered_at: self.delivered_at,
            last_error: self.last_delivery_error.clone(),
            parked_at: None,
            park_cause: None,
            updated_at: self.last_seen_at,
        })
    }
}

/// Ingested events newest first, after `cursor`, at most `limit + 1` rows,
/// each with its deliveries: one round trip, the page and its deliveries
/// read by two statements over the same filter.
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
    let page =
        format!("FROM events {clause} ORDER BY ingested_at DESC, event_id DESC LIMIT {limit}");
    let results = crate::db::batch(
        db,
        vec![
            db.prepare(format!("SELECT {SUMMARY_COLUMNS} {page}"))
                .bind(&w.params)?,
            crate::db::delivery_rows::for_page(db, &format!("SELECT event_id {page}"), &w.params)?,
        ],
    )
    .await?;
    let (Some(events), Some(deliveries)) = (results.first(), results.get(1)) else {
        return Err(worker::Error::RustError(
            "the events listing answered too few results".into(),
        ));
    };
    let deliveries: Vec<DeliveryRow> = deliveries.decode()?;
    Ok(events
        .decode::<EventSummary>()?
        .into_iter()
        .map(|e| e.with_deliveries(&deliveries))
        .collect())
}

/// One event as its story shows it: the listing fields, where it is parked,
/// what carried it, and the event itself as kept: its redacted headers and
/// its body (inline, or the claim-checked payload).
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
    /// Its request headers as kept (credentials were redacted at ingest).
    #[serde(deserialize_with = "headers_of")]
    pub headers: BTreeMap<String, String>,
    /// Its body as kept: inline, or the claim-checked payload; null once
    /// retention swept it.
    pub body: Option<String>,
    /// The `payloads` key, when the body was claim-checked.
    pub body_ref: Option<String>,
    /// The destinations whose route's filter it did not match (JSON list).
    #[serde(skip_serializing, default)]
    pub routes_unmatched: Option<String>,
}

impl EventRow {
    /// The destinations whose route's filter the event did not match; a
    /// list that does not read reads as none (the row is evidence).
    pub fn routes_unmatched(&self) -> Vec<String> {
        self.routes_unmatched
            .as_deref()
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default()
    }
}

/// The stored headers' JSON text as a map, redacted again on the way out:
/// an error if it is not a JSON object of strings.
fn headers_of<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<BTreeMap<String, String>, D::Error> {
    let text = String::deserialize(d)?;
    let headers: BTreeMap<String, String> =
        serde_json::from_str(&text).map_err(serde::de::Error::custom)?;
    Ok(redact_map(&headers))
}

/// The event row of one event id (a statement for the story batch).
pub fn story_row(db: &D1Database, event_id: &str) -> Result<D1PreparedStatement> {
    db.prepare(
        "SELECT event_id, idempotency_key, source, delivery_id, received_at, ingested_at, last_seen_at, duplicate_count, delivery_status, delivery_attempts, delivered_at, last_delivery_error, routed_at, \
         parked_at, parked_destination, queue_message_id, body_bytes, headers, body_ref, routes_unmatched, \
         COALESCE(body, (SELECT p.body FROM payloads p WHERE p.event_id = events.body_ref)) AS body \
         FROM events WHERE event_id = ?1",
    )
    .bind(&[text(event_id)])
}
