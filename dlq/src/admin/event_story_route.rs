//! `GET /events/:event_id`: the whole story of one event in one call — the
//! event row, every consumer attempt, every delivery step, its dead-letter
//! entries and every decision about them — read in one D1 batch, so the
//! parts describe the same moment.

use super::{ApiError, ApiResult};
use hookrelay_core::admin_query::refuse_any;
use hookrelay_core::redact::destination_label;
use hookrelay_platform::db::attempts::{self, EventAttempt};
use hookrelay_platform::db::dead_letters::{self, EntrySummary};
use hookrelay_platform::db::event_steps::{self, StepRow};
use hookrelay_platform::db::events::{self, EventRow};
use hookrelay_platform::db::replay_audit::{self, AuditRow};
use hookrelay_platform::db::Rows;
use serde::de::DeserializeOwned;
use serde_json::json;
use worker::D1Database;

/// The story of `event_id`, or 404 naming it.
pub async fn story(db: &D1Database, event_id: &str, params: &[(String, String)]) -> ApiResult {
    refuse_any(params)?;
    let results = hookrelay_platform::db::batch(
        db,
        vec![
            events::story_row(db, event_id)?,
            attempts::for_event(db, event_id)?,
            event_steps::for_event(db, event_id)?,
            dead_letters::for_event(db, event_id)?,
            replay_audit::for_event_statement(db, event_id)?,
        ],
    )
    .await?;
    let Some(mut event) = rows::<EventRow>(&results, 0)?.into_iter().next() else {
        let shown: String = event_id.chars().take(80).collect();
        return Err(ApiError::NotFound(format!(
            "no event '{shown}'; event ids look like evt_ and 32 hex digits (GET /api/v1/admin/events?key=… finds one by idempotency key)"
        )));
    };
    // A destination URL may carry credentials in its user-info or query.
    event.parked_destination = event.parked_destination.as_deref().map(destination_label);
    Ok(json!({
        "event": event,
        "attempts": rows::<EventAttempt>(&results, 1)?,
        "steps": rows::<StepRow>(&results, 2)?,
        "dead_letters": rows::<EntrySummary>(&results, 3)?,
        "decisions": rows::<AuditRow>(&results, 4)?,
    }))
}

/// The rows of the batch's `i`th statement.
fn rows<T: DeserializeOwned>(results: &[Rows], i: usize) -> Result<Vec<T>, ApiError> {
    match results.get(i) {
        Some(r) => Ok(r.decode::<T>()?),
        None => Err(ApiError::Unavailable(
            "D1 answered fewer results than the story asked for; try again".into(),
        )),
    }
}
