//! `GET /events/:event_id`: the whole story of one event in one call — the
//! event itself (its row, redacted headers and body as kept), every
//! consumer attempt, every delivery step, its dead-letter entries and every
//! decision about them — read in one D1 batch, so the parts describe the
//! same moment.

use super::batch_reader::Batch;
use super::{ApiError, ApiResult};
use hookrelay_core::admin_query::refuse_any;
use hookrelay_core::redact::destination_label;
use hookrelay_platform::db::attempts::{self, EventAttempt};
use hookrelay_platform::db::dead_letters::{self, EntrySummary};
use hookrelay_platform::db::event_steps::{self, StepRow};
use hookrelay_platform::db::events::{self, EventRow};
use hookrelay_platform::db::replay_audit::{self, AuditRow};
use serde_json::json;
use worker::D1Database;

/// The story of `event_id`, or 404 naming it.
pub async fn story(db: &D1Database, event_id: &str, params: &[(String, String)]) -> ApiResult {
    refuse_any(params)?;
    let mut b = Batch::new("the event's story");
    let event = b.add::<EventRow>("the event", events::story_row(db, event_id)?);
    let attempts = b.add::<EventAttempt>("its attempts", attempts::for_event(db, event_id)?);
    let steps = b.add::<StepRow>("its delivery steps", event_steps::for_event(db, event_id)?);
    let entries = b.add::<EntrySummary>("its dead letters", dead_letters::for_event(db, event_id)?);
    let decisions = b.add::<AuditRow>(
        "its decisions",
        replay_audit::for_event_statement(db, event_id)?,
    );
    let a = b.run(db).await?;
    let Some(mut event) = a.first(&event)? else {
        let shown: String = event_id.chars().take(80).collect();
        return Err(ApiError::NotFound(format!(
            "no event '{shown}'; event ids look like evt_ and 32 hex digits (GET /api/v1/admin/events?key=… finds one by idempotency key)"
        )));
    };
    // A destination URL may carry credentials in its user-info or query.
    event.parked_destination = event.parked_destination.as_deref().map(destination_label);
    Ok(json!({
        "event": event,
        "attempts": a.rows(&attempts)?,
        "steps": a.rows(&steps)?,
        "dead_letters": a.rows(&entries)?,
        "decisions": a.rows(&decisions)?,
    }))
}
