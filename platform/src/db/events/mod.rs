//! `events`: one row per idempotency key, with its delivery state and lease.

use super::{int, opt_text, text};
use crate::db::{Query, Rows};
use hookrelay_core::receive::queued_event::{EventBody, QueuedEvent};
use hookrelay_core::state::error_code::{ErrorCode, Failure};
use hookrelay_core::state::{DeliverySummary, IngestKind};
use worker::{D1Database, D1PreparedStatement, Result};

pub mod delivery_evidence;
pub mod event_figures;
pub mod ingest_set;
mod listing;
mod parked;

pub use listing::{list, story_row, EventRow, EventSummary};
pub use parked::*;

/// The ingest result plus what the pipeline needs next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ingest {
    /// Fresh, duplicate or redelivered.
    pub kind: IngestKind,
    /// The row's delivery status after the ingest.
    pub delivery_status: DeliverySummary,
}

/// How ingest routed an event: its first `delivery_status`, when, and the
/// destinations whose route did not match (JSON, NULL when none).
pub struct Routing {
    /// `none`, `filtered` or `pending`.
    pub status: DeliverySummary,
    /// When the routes were evaluated (unix ms).
    pub routed_at: i64,
    /// `routes_unmatched`.
    pub unmatched: Option<String>,
}

impl Routing {
    /// The routing of `routed`, evaluated at `now_ms`.
    pub fn of(routed: &hookrelay_core::route::Routed, now_ms: i64) -> Routing {
        use hookrelay_core::route::Routed;
        let unmatched = match routed {
            Routed::Routed { unmatched, .. } if !unmatched.is_empty() => {
                serde_json::to_string(unmatched).ok()
            }
            _ => None,
        };
        Routing {
            status: DeliverySummary::routed(routed),
            routed_at: now_ms,
            unmatched,
        }
    }
}

/// The one statement that ingests an event, in the batch's transaction:
/// insert it, or, for a key already there, count a duplicate only when a
/// *different* queue message carries it: neither the first carrier nor
/// the latest (a retry of either is not a duplicate delivery, including the
/// first message retried after a duplicate arrived). SET expressions read
/// the row as it was.
/// The `nonce` (one per message batch) stamped on the row and read back by
/// `RETURNING` says which of the two happened; the `counters` rows for
/// `ingest` and `duplicate` are kept by triggers (migration 0007).
pub fn ingest_statement(
    db: &D1Database,
    event: &QueuedEvent,
    queue_message_id: &str,
    routing: &Routing,
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
        "INSERT INTO events (idempotency_key, event_id, source, delivery_id, received_at, ingested_at, last_seen_at, duplicate_count, queue_message_id, last_message_id, headers, body, body_ref, body_bytes, delivery_status, ingest_nonce, routed_at, routes_unmatched) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, 0, ?7, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15) \
         ON CONFLICT(idempotency_key) DO UPDATE SET \
           duplicate_count = duplicate_count + ((last_message_id IS NOT excluded.last_message_id AND queue_message_id IS NOT excluded.last_message_id)), \
           duplicate_nonce = CASE WHEN (last_message_id IS NOT excluded.last_message_id AND queue_message_id IS NOT excluded.last_message_id) THEN excluded.ingest_nonce ELSE duplicate_nonce END, \
           last_seen_at = CASE WHEN (last_message_id IS NOT excluded.last_message_id AND queue_message_id IS NOT excluded.last_message_id) THEN excluded.last_seen_at ELSE last_seen_at END, \
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
        text(routing.status.as_str()),
        text(nonce),
        int(routing.routed_at),
        opt_text(routing.unmatched.as_deref()),
    ])
}

/// Reads the result of one event's [`ingest_statement`] run with `nonce`.
pub fn read_ingest(result: &Rows, nonce: &str) -> std::result::Result<Ingest, Failure> {
    struct Row {
        ingest_nonce: Option<String>,
        duplicate_nonce: Option<String>,
        delivery_status: String,
    }
    let row = result
        .map(|r| {
            Ok(Row {
                ingest_nonce: r.opt_text("ingest_nonce")?,
                duplicate_nonce: r.opt_text("duplicate_nonce")?,
                delivery_status: r.text("delivery_status")?,
            })
        })
        .ok()
        .and_then(|rows| rows.into_iter().next())
        .ok_or_else(|| {
            Failure::new(
                ErrorCode::D1Unavailable,
                "D1 returned no row for an ingest upsert; retrying",
            )
        })?;
    let kind = kind_of(
        row.ingest_nonce.as_deref(),
        row.duplicate_nonce.as_deref(),
        nonce,
    );
    let delivery_status = DeliverySummary::parse(&row.delivery_status)
        .map_err(|e| Failure::new(ErrorCode::Unknown, e.to_string()))?;
    Ok(Ingest {
        kind,
        delivery_status,
    })
}

/// Fresh, duplicate or redelivered, from the nonces a returned row carries.
/// Checked in this order: a provider's duplicate in the same batch as its
/// first delivery finds the batch's nonce on both columns.
fn kind_of(ingest_nonce: Option<&str>, duplicate_nonce: Option<&str>, nonce: &str) -> IngestKind {
    if duplicate_nonce == Some(nonce) {
        IngestKind::Duplicate
    } else if ingest_nonce == Some(nonce) {
        IngestKind::Fresh
    } else {
        IngestKind::Redelivered
    }
}

/// Whether the event's row is in D1 (a replay of one delivery ingests it
/// again only when the sweep took it).
pub async fn exists(db: &D1Database, event_id: &str) -> Result<bool> {
    let result = db
        .prepare("SELECT 1 AS one FROM events WHERE event_id = ?1")
        .bind(&[text(event_id)])?
        .all()
        .await?;
    Ok(!result.results::<serde_json::Value>()?.is_empty())
}

/// Marks the events whose messages were dead-lettered (`event_ids`, one
/// statement for a whole DLQ batch) as `failed`, unless delivered
/// meanwhile, so "did this webhook arrive?" says it failed.
pub async fn mark_dead_lettered(db: &D1Database, event_ids: &[&str]) -> Result<()> {
    if event_ids.is_empty() {
        return Ok(());
    }
    let ids = serde_json::to_string(event_ids)?;
    db.prepare("UPDATE events SET delivery_status = ?2 WHERE event_id IN (SELECT value FROM json_each(?1)) AND delivery_status IN (?3, ?4)")
        .bind(&[
            text(&ids),
            text(DeliverySummary::Failed.as_str()),
            text(DeliverySummary::Pending.as_str()),
            text(DeliverySummary::Delivering.as_str()),
        ])?
        .query()
        .await?;
    Ok(())
}
