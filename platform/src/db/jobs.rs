//! `jobs`: one row per bulk decision, with its counts and the generation
//! that fences its chain of step messages.

use super::{changes, int, opt_text, text};
use hookrelay_core::admin_query::Cursor;
use hookrelay_core::jobs::JobRequest;
use hookrelay_core::state::JobStatus;
use serde::{Deserialize, Serialize};
use worker::{D1Database, D1PreparedStatement, Result};

/// A job as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobRow {
    /// `job_…`.
    pub id: String,
    /// Replay, archive or discard.
    pub action: String,
    /// Where it stands.
    pub status: JobStatus,
    /// Why.
    pub reason: String,
    /// Who created it.
    pub actor: String,
    /// The request, as JSON.
    pub spec: String,
    /// Entries in its set.
    pub matched: i64,
    /// `succeeded + failed + deduped`.
    pub attempted: i64,
    /// Done as asked.
    pub succeeded: i64,
    /// Tried and failed.
    pub failed: i64,
    /// Identical to one already replayed in this job.
    pub deduped: i64,
    /// No longer eligible when their turn came.
    pub skipped: i64,
    /// `None` until the canary finished.
    pub canary_passed: Option<i64>,
    /// Why it stopped itself.
    pub abort_reason: Option<String>,
    /// Fences its step messages.
    pub generation: i64,
    /// Created (unix ms).
    pub created_at: i64,
    /// Last changed.
    pub updated_at: i64,
    /// Finished, if it has.
    pub finished_at: Option<i64>,
}

const COLUMNS: &str = "id, action, status, reason, actor, spec, matched, attempted, succeeded, failed, deduped, skipped, canary_passed, abort_reason, generation, created_at, updated_at, finished_at";

/// The insert of a new job (queued, generation 1).
pub fn insert(
    db: &D1Database,
    id: &str,
    req: &JobRequest,
    actor: &str,
    matched: u64,
    now: i64,
) -> Result<D1PreparedStatement> {
    db.prepare("INSERT INTO jobs (id, action, status, reason, actor, spec, matched, generation, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 1, ?8, ?8)")
        .bind(&[
            text(id),
            text(req.action.as_str()),
            text(JobStatus::Queued.as_str()),
            text(&req.reason),
            text(actor),
            text(&serde_json::to_string(req)?),
            int(matched as i64),
            int(now),
        ])
}

/// One job.
pub async fn get(db: &D1Database, id: &str) -> Result<Option<JobRow>> {
    db.prepare(format!("SELECT {COLUMNS} FROM jobs WHERE id = ?1"))
        .bind(&[text(id)])?
        .first::<JobRow>(None)
        .await
}

/// Jobs newest first, after `cursor`, at most `limit + 1`.
pub async fn list(db: &D1Database, cursor: Option<&Cursor>, limit: u32) -> Result<Vec<JobRow>> {
    let mut w = super::Where::default();
    if let Some(c) = cursor {
        w.after("created_at, id", "<", c.at_ms, text(&c.id));
    }
    let (clause, limit) = w.finish(limit);
    db.prepare(format!(
        "SELECT {COLUMNS} FROM jobs {clause} ORDER BY created_at DESC, id DESC LIMIT {limit}"
    ))
    .bind(&w.params)?
    .all()
    .await?
    .results()
}

/// Counts to add after a batch of entries.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counts {
    /// Succeeded.
    pub succeeded: u64,
    /// Failed.
    pub failed: u64,
    /// Deduped.
    pub deduped: u64,
    /// Skipped.
    pub skipped: u64,
}

/// Adds a batch's counts. Not fenced by the generation: the entries were
/// handled, whatever an operator did to the job meanwhile.
pub fn add_counts(db: &D1Database, id: &str, c: Counts, now: i64) -> Result<D1PreparedStatement> {
    db.prepare("UPDATE jobs SET succeeded = succeeded + ?2, failed = failed + ?3, deduped = deduped + ?4, skipped = skipped + ?5, attempted = attempted + ?2 + ?3 + ?4, updated_at = ?6 WHERE id = ?1")
        .bind(&[
            text(id),
            int(c.succeeded as i64),
            int(c.failed as i64),
            int(c.deduped as i64),
            int(c.skipped as i64),
            int(now),
        ])
}

/// A status change fenced by the generation: it applies only if no one
/// moved the job on meanwhile, and it bumps the generation so any step
/// message still in flight becomes stale. Answers whether it applied.
pub struct Transition<'a> {
    /// The job.
    pub id: &'a str,
    /// The generation the caller read.
    pub generation: i64,
    /// The new status.
    pub status: JobStatus,
    /// The canary's verdict, when it just finished.
    pub canary_passed: Option<bool>,
    /// Why it aborted, if it did.
    pub abort_reason: Option<&'a str>,
    /// Whether it has finished for good.
    pub finished: bool,
}

/// Applies a fenced transition; whether it applied.
pub async fn transition(db: &D1Database, t: &Transition<'_>, now: i64) -> Result<bool> {
    let result = db
        .prepare("UPDATE jobs SET status = ?3, generation = generation + 1, canary_passed = COALESCE(?4, canary_passed), abort_reason = COALESCE(?5, abort_reason), finished_at = CASE WHEN ?6 = 1 THEN ?7 ELSE finished_at END, updated_at = ?7 WHERE id = ?1 AND generation = ?2")
        .bind(&[
            text(t.id),
            int(t.generation),
            text(t.status.as_str()),
            t.canary_passed.map_or(wasm_bindgen::JsValue::NULL, |p| int(i64::from(p))),
            opt_text(t.abort_reason),
            int(i64::from(t.finished)),
            int(now),
        ])?
        .run()
        .await?;
    Ok(changes(&result) > 0)
}

/// Jobs whose chain of step messages looks lost: working statuses not
/// touched since `stale_before` (for the periodic resume).
pub async fn stalled(db: &D1Database, stale_before: i64) -> Result<Vec<JobRow>> {
    db.prepare(format!(
        "SELECT {COLUMNS} FROM jobs WHERE status IN (?1, ?2, ?3) AND updated_at < ?4 LIMIT 20"
    ))
    .bind(&[
        text(JobStatus::Queued.as_str()),
        text(JobStatus::Canary.as_str()),
        text(JobStatus::Running.as_str()),
        int(stale_before),
    ])?
    .all()
    .await?
    .results()
}
