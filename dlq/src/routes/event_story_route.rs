//! `GET /events/:event_id`: the whole story of one event in one call — the
//! event itself (its row, redacted headers and body as kept), every
//! consumer attempt, each delivery with its destination's attempts, the
//! routes it did not match, every delivery step, its dead-letter entries
//! and every decision about them — read in one D1 batch, so the parts
//! describe the same moment.
//!
//! Once the retention sweep deleted the event's row (with its attempts and
//! steps), the story still answers `200` with what D1 holds (its entries
//! and decisions, maybe none), `"event": null`, and `event_archive_key`:
//! the `events/…` object that holds the row, as the sweep named it on the
//! entries and in `swept_events` (kept one `EVENT_RETENTION`; DESIGN §4).
//! An id D1 knows nothing of is a 404.

use super::batch_reader::Batch;
use super::{ApiError, ApiResult};
use hookrelay_core::admin::query::refuse_any;
use hookrelay_core::support::redact::destination_label;
use hookrelay_platform::db::attempts::{self, EventAttempt};
use hookrelay_platform::db::dead_letters::{self, EntrySummary};
use hookrelay_platform::db::delivery_rows::{self, DeliveryRow};
use hookrelay_platform::db::event_steps::{self, StepRow};
use hookrelay_platform::db::events::{self, EventRow};
use hookrelay_platform::db::replay_audit::{self, AuditRow};
use hookrelay_platform::db::swept_events;
use serde::Deserialize;
use serde_json::{json, Value};
use worker::D1Database;

/// The key an event's entries name, once its row was swept.
#[derive(Deserialize)]
struct ArchiveKeyRow {
    key: String,
}

/// The story of `event_id`, or 404 naming it.
pub async fn story(db: &D1Database, event_id: &str, params: &[(String, String)]) -> ApiResult {
    refuse_any(params)?;
    let mut b = Batch::new("the event's story");
    let event = b.add::<EventRow>("the event", events::story_row(db, event_id)?);
    let attempts = b.add::<EventAttempt>("its attempts", attempts::for_event(db, event_id)?);
    let steps = b.add::<StepRow>("its delivery steps", event_steps::for_event(db, event_id)?);
    let deliveries =
        b.add::<DeliveryRow>("its deliveries", delivery_rows::for_event(db, event_id)?);
    let entries = b.add::<EntrySummary>("its dead letters", dead_letters::for_event(db, event_id)?);
    let decisions = b.add::<AuditRow>(
        "its decisions",
        replay_audit::for_event_statement(db, event_id)?,
    );
    let archived = b.add::<ArchiveKeyRow>(
        "its archive key",
        dead_letters::event_archive_key(db, event_id)?,
    );
    let swept = b.add::<ArchiveKeyRow>("its sweep", swept_events::archive_key(db, event_id)?);
    let a = b.run(db).await?;
    let archive_key = match a.first(&archived)? {
        Some(k) => Some(k.key),
        None => a.first(&swept)?.map(|k| k.key),
    };
    let (entries, decisions) = (a.rows(&entries)?, a.rows(&decisions)?);
    let attempts = a.rows(&attempts)?;
    let mut deliveries = a.rows(&deliveries)?;
    let mut routes_unmatched = Vec::new();
    let event = match a.first(&event)? {
        Some(mut event) => {
            // A destination URL may carry credentials in its user-info or query.
            event.parked_destination = event.parked_destination.as_deref().map(destination_label);
            routes_unmatched = event.routes_unmatched();
            event.summary = event.summary.with_deliveries(&deliveries);
            deliveries = std::mem::take(&mut event.summary.deliveries);
            Some(event)
        }
        // Swept: what D1 still holds is the story, with the archive key.
        None if archive_key.is_some() || !entries.is_empty() || !decisions.is_empty() => None,
        None => return Err(not_found(event_id)),
    };
    let legacy = event
        .as_ref()
        .is_some_and(|e| e.summary.routed_at.is_none());
    let deliveries: Vec<Value> = deliveries
        .iter()
        .map(|d| with_history(d, &attempts, legacy))
        .collect();
    // The event's deliveries are the story's own part, with their attempts.
    let mut event = serde_json::to_value(event).unwrap_or(Value::Null);
    if let Some(e) = event.as_object_mut() {
        e.remove("deliveries");
    }
    Ok(json!({
        "event": event,
        "event_archive_key": archive_key,
        "deliveries": deliveries,
        "routes_unmatched": routes_unmatched,
        "attempts": attempts,
        "steps": a.rows(&steps)?,
        "dead_letters": entries,
        "decisions": decisions,
    }))
}

/// The 404 of an id D1 knows nothing of, saying where else to look.
fn not_found(event_id: &str) -> ApiError {
    let shown: String = event_id.chars().take(80).collect();
    ApiError::NotFound(format!(
        "no event '{shown}' in D1; event ids look like evt_ and 32 hex digits (GET /api/v1/admin/events?key=… finds one by idempotency key). An event swept longer ago than EVENT_RETENTION is only in the archive: GET /api/v1/admin/archive?table=events&day=YYYY-MM-DD lists its day's objects"
    ))
}

/// A delivery with its destination's attempts, oldest first. A legacy
/// event's one delivery takes the attempts recorded with no destination
/// (before deliveries existed, a delivery attempt named none).
fn with_history(d: &DeliveryRow, attempts: &[EventAttempt], legacy: bool) -> Value {
    let history: Vec<&EventAttempt> = attempts
        .iter()
        .filter(|a| match (&a.destination, legacy) {
            (Some(name), _) => *name == d.destination,
            (None, legacy) => legacy,
        })
        .collect();
    let mut v = serde_json::to_value(d).unwrap_or(Value::Null);
    v["history"] = json!(history);
    v
}
