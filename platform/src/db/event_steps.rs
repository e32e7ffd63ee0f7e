//! `event_steps`: one row per step of an event's delivery — each downstream
//! call's result, each park, each drained delivery — so "what happened to
//! this webhook?" has one answer.

use super::{int, opt_text, text};
use hookrelay_core::metrics::Component;
use hookrelay_core::state::error_code::ErrorCode;
use hookrelay_core::state::EventStep;
use serde::{Deserialize, Serialize};
use worker::{D1Database, D1PreparedStatement, Result};

/// One step to record.
pub struct StepRecord<'a> {
    /// The event.
    pub event_id: &'a str,
    /// What happened.
    pub step: EventStep,
    /// Who did it: the consumer, a replay or a drain.
    pub component: Component,
    /// The failure code, if it failed.
    pub code: Option<ErrorCode>,
    /// A short note (never a payload).
    pub detail: &'a str,
    /// When (unix ms).
    pub at_ms: i64,
}

/// The insert statement of one step, for batching with the write it
/// records (so the story and the state never disagree).
pub fn insert(db: &D1Database, r: &StepRecord<'_>) -> Result<D1PreparedStatement> {
    db.prepare("INSERT INTO event_steps (event_id, at, step, component, code, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
        .bind(&[
            text(r.event_id),
            int(r.at_ms),
            text(r.step.as_str()),
            text(r.component.as_str()),
            opt_text(r.code.map(ErrorCode::as_str)),
            text(r.detail),
        ])
}

/// The insert of many steps in one statement (a batch's calls), in order,
/// for batching with the writes they record; `None` when there are none.
pub fn insert_many(
    db: &D1Database,
    records: &[StepRecord<'_>],
) -> Result<Option<D1PreparedStatement>> {
    if records.is_empty() {
        return Ok(None);
    }
    let rows: Vec<serde_json::Value> = records
        .iter()
        .map(|r| {
            serde_json::json!([
                r.event_id,
                r.at_ms,
                r.step.as_str(),
                r.component.as_str(),
                r.code.map(ErrorCode::as_str),
                r.detail
            ])
        })
        .collect();
    let stmt = db
        .prepare(
            "INSERT INTO event_steps (event_id, at, step, component, code, detail) \
             SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5 FROM json_each(?1)",
        )
        .bind(&[text(&serde_json::to_string(&rows)?)])?;
    Ok(Some(stmt))
}

/// One recorded step, as an event's story shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepRow {
    /// Row id (orders steps written in the same millisecond).
    pub id: i64,
    /// When (unix ms).
    pub at: i64,
    /// What happened.
    pub step: EventStep,
    /// `consumer`, `replay` or `drain`.
    pub component: String,
    /// The failure code, if it failed.
    pub code: Option<String>,
    /// A short note.
    pub detail: Option<String>,
}

/// Every step of one event, oldest first (a statement for the story batch).
pub fn for_event(db: &D1Database, event_id: &str) -> Result<D1PreparedStatement> {
    db.prepare("SELECT id, at, step, component, code, detail FROM event_steps WHERE event_id = ?1 ORDER BY at, id")
        .bind(&[text(event_id)])
}
