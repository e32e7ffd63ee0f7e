//! `events` as the admin API reads it: the listing and one event's row.

use crate::db::Query;
use crate::db::{text, Where};
use hookrelay_core::admin_query::{Cursor, EventFilter};
use hookrelay_core::redact::redact_map;
use hookrelay_core::state::DeliveryStatus;
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
    db.prepare(sql).bind(&w.params)?.query().await?.decode()
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
        "SELECT event_id, idempotency_key, source, delivery_id, received_at, ingested_at, last_seen_at, duplicate_count, delivery_status, delivery_attempts, delivered_at, last_delivery_error, \
         parked_at, parked_destination, queue_message_id, body_bytes, headers, body_ref, \
         COALESCE(body, (SELECT p.body FROM payloads p WHERE p.event_id = events.body_ref)) AS body \
         FROM events WHERE event_id = ?1",
    )
    .bind(&[text(event_id)])
}
