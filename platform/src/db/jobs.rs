//! `jobs`: one row per bulk decision, with its counts and the generation
//! that fences its chain of step messages.

use super::{changes, int, opt_text, text};
use crate::db::Query;
use hookrelay_core::admin::query::Cursor;
use hookrelay_core::jobs::JobRequest;
use hookrelay_core::state::{JobEntryOutcome, JobEntryState, JobStatus};
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
        .query()
        .await?
        .first::<JobRow>()
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
    .query()
    .await?
    .decode()
}

/// Adds what came of a batch of entries to the job's counts, in the same D1
/// batch as (and before) the entries' [`super::job_entries::done`]
/// statements. Only entries still pending in the set are counted, so an
/// entry recorded twice (a step message delivered twice) counts once. Not
/// fenced by the generation: the entries were handled, whatever an
/// operator did to the job meanwhile.
pub fn add_outcomes(
    db: &D1Database,
    id: &str,
    outcomes: &[(&str, JobEntryOutcome)],
    now: i64,
) -> Result<D1PreparedStatement> {
    let mut params = vec![text(id), int(now), text(JobEntryState::Pending.as_str())];
    let mut count_of = |want: JobEntryOutcome| -> String {
        let ids: Vec<&str> = outcomes
            .iter()
            .filter(|(_, o)| *o == want)
            .map(|(e, _)| *e)
            .collect();
        if ids.is_empty() {
            return "0".to_string();
        }
        let first = params.len() + 1;
        let marks: Vec<String> = (first..first + ids.len())
            .map(|i| format!("?{i}"))
            .collect();
        params.extend(ids.iter().map(|e| text(e)));
        format!(
            "(SELECT count(*) FROM job_entries WHERE job_id = ?1 AND state = ?3 AND entry_id IN ({}))",
            marks.join(", ")
        )
    };
    let succeeded = count_of(JobEntryOutcome::Succeeded);
    let failed = count_of(JobEntryOutcome::Failed);
    let deduped = count_of(JobEntryOutcome::Deduped);
    let skipped = count_of(JobEntryOutcome::Skipped);
    db.prepare(format!(
        "UPDATE jobs SET succeeded = succeeded + {succeeded}, failed = failed + {failed}, deduped = deduped + {deduped}, skipped = skipped + {skipped}, \
         attempted = attempted + {succeeded} + {failed} + {deduped}, updated_at = ?2 WHERE id = ?1"
    ))
    .bind(&params)
}

/// Sets `matched` to the size of the set as written (in the creating batch,
/// after the set's insert), and answers it.
pub fn set_matched_from_set(db: &D1Database, id: &str) -> Result<D1PreparedStatement> {
    db.prepare("UPDATE jobs SET matched = (SELECT count(*) FROM job_entries WHERE job_id = ?1) WHERE id = ?1 RETURNING matched")
        .bind(&[text(id)])
}

/// A status change fenced by the generation: it applies only if no one
/// moved the job on meanwhile, and (with `bump`) it bumps the generation so
/// any step message still in flight becomes stale. Answers whether it
/// applied.
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
    /// Whether it bumps the generation, ending every chain of step messages
    /// (an operator's command, a resume). A step's own transition keeps it,
    /// so the step's retry still runs.
    pub bump: bool,
}

/// Applies a fenced transition; whether it applied.
pub async fn transition(db: &D1Database, t: &Transition<'_>, now: i64) -> Result<bool> {
    let result = db
        .prepare("UPDATE jobs SET status = ?3, generation = generation + ?8, canary_passed = COALESCE(?4, canary_passed), abort_reason = COALESCE(?5, abort_reason), finished_at = CASE WHEN ?6 = 1 THEN ?7 ELSE finished_at END, updated_at = ?7 WHERE id = ?1 AND generation = ?2")
        .bind(&[
            text(t.id),
            int(t.generation),
            text(t.status.as_str()),
            t.canary_passed.map_or(wasm_bindgen::JsValue::NULL, |p| int(i64::from(p))),
            opt_text(t.abort_reason),
            int(i64::from(t.finished)),
            int(now),
            int(i64::from(t.bump)),
        ])?
        .query()
        .await?;
    Ok(changes(&result) > 0)
}

/// Moves the generation from `from` to `to` if it still is `from`: a step
/// hands its chain on to the message it is about to send (and takes it back
/// if the send failed). Whether it applied.
pub async fn set_generation(
    db: &D1Database,
    id: &str,
    from: i64,
    to: i64,
    now: i64,
) -> Result<bool> {
    let result = db
        .prepare(
            "UPDATE jobs SET generation = ?3, updated_at = ?4 WHERE id = ?1 AND generation = ?2",
        )
        .bind(&[text(id), int(from), int(to), int(now)])?
        .query()
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
    .query()
    .await?
    .decode()
}
