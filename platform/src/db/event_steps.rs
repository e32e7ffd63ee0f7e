//! `event_steps`: one row per step of an event's delivery — each downstream
//! call's result, each park, each drained delivery — so "what happened to
//! this webhook?" has one answer.

use super::{int, opt_text, text};
use hookrelay_core::error_code::ErrorCode;
use hookrelay_core::metrics::Component;
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
