//! The set-based form of the ingest upsert: one statement for many events
//! (`hookrelay_core::ingest::batch` decides when it applies). Same columns,
//! same conflict rule and same `RETURNING` as [`super::ingest_statement`],
//! plus the key, to match rows back to events.

use super::{kind_of, Ingest};
use crate::db::Rows;
use crate::db::{int, text};
use hookrelay_core::receive::queued_event::{EventBody, QueuedEvent};
use hookrelay_core::state::DeliverySummary;
use hookrelay_core::support::vec_map::VecMap;
use serde_json::json;
use worker::{D1Database, D1PreparedStatement, Result};

/// One event's row for [`statement`], as JSON text.
pub fn row_json(
    event: &QueuedEvent,
    queue_message_id: &str,
    routing: &super::Routing,
) -> Result<String> {
    let headers = serde_json::to_string(&event.headers)?;
    let (body, body_ref, body_bytes) = match &event.body {
        EventBody::Inline { body } => (Some(body.as_str()), None, body.len()),
        EventBody::Stored {
            body_ref,
            body_bytes,
        } => (None, Some(body_ref.as_str()), *body_bytes as usize),
    };
    let row = json!([
        event.idempotency_key,
        event.event_id,
        event.source,
        event.delivery_id,
        event.received_at_ms,
        queue_message_id,
        headers,
        body,
        body_ref,
        body_bytes,
        routing.status.as_str(),
        routing.routed_at,
        routing.unmatched
    ]);
    Ok(row.to_string())
}

/// The upsert of the rows `rows_json` (each from [`row_json`]).
pub fn statement(
    db: &D1Database,
    rows_json: &[&str],
    nonce: &str,
    now_ms: i64,
) -> Result<D1PreparedStatement> {
    let rows = format!("[{}]", rows_json.join(","));
    db.prepare(
        "INSERT INTO events (idempotency_key, event_id, source, delivery_id, received_at, ingested_at, last_seen_at, duplicate_count, queue_message_id, last_message_id, headers, body, body_ref, body_bytes, delivery_status, ingest_nonce, routed_at, routes_unmatched) \
         SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, ?2, ?2, 0, value ->> 5, value ->> 5, value ->> 6, value ->> 7, value ->> 8, value ->> 9, value ->> 10, ?3, value ->> 11, value ->> 12 \
         FROM json_each(?1) WHERE true \
         ON CONFLICT(idempotency_key) DO UPDATE SET \
           duplicate_count = duplicate_count + ((last_message_id IS NOT excluded.last_message_id AND queue_message_id IS NOT excluded.last_message_id)), \
           duplicate_nonce = CASE WHEN (last_message_id IS NOT excluded.last_message_id AND queue_message_id IS NOT excluded.last_message_id) THEN excluded.ingest_nonce ELSE duplicate_nonce END, \
           last_seen_at = CASE WHEN (last_message_id IS NOT excluded.last_message_id AND queue_message_id IS NOT excluded.last_message_id) THEN excluded.last_seen_at ELSE last_seen_at END, \
           last_message_id = excluded.last_message_id \
         RETURNING idempotency_key, ingest_nonce, duplicate_nonce, delivery_status",
    )
    .bind(&[text(&rows), int(now_ms), text(nonce)])
}

/// What [`statement`] did to each key, read back with the batch's `nonce`.
pub fn read(result: &Rows, nonce: &str) -> Result<VecMap<String, Ingest>> {
    struct Row {
        idempotency_key: String,
        ingest_nonce: Option<String>,
        duplicate_nonce: Option<String>,
        delivery_status: String,
    }
    let rows = result.map(|r| {
        Ok(Row {
            idempotency_key: r.text("idempotency_key")?,
            ingest_nonce: r.opt_text("ingest_nonce")?,
            duplicate_nonce: r.opt_text("duplicate_nonce")?,
            delivery_status: r.text("delivery_status")?,
        })
    })?;
    let mut out = VecMap::new();
    for row in rows {
        let delivery_status = DeliverySummary::parse(&row.delivery_status)
            .map_err(|e| worker::Error::RustError(e.to_string()))?;
        let kind = kind_of(
            row.ingest_nonce.as_deref(),
            row.duplicate_nonce.as_deref(),
            nonce,
        );
        out.insert(
            row.idempotency_key,
            Ingest {
                kind,
                delivery_status,
            },
        );
    }
    Ok(out)
}
