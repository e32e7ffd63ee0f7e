//! `replay_audit`: every decision about an entry — who, when, why, and what
//! happened.

use super::{int, opt_text, text, Where};
use crate::db::Query;
use hookrelay_core::admin::query::{AuditFilter, Cursor};
use hookrelay_core::state::error_code::Failure;
use hookrelay_core::state::{AuditAction, EntryStatus, ReplayOutcome};
use serde::{Deserialize, Serialize};
use worker::{D1Database, D1PreparedStatement, Result};

/// One decision to record.
pub struct AuditRecord<'a> {
    /// The entry.
    pub entry_id: &'a str,
    /// Its event, when known.
    pub event_id: Option<&'a str>,
    /// The token subject.
    pub actor: &'a str,
    /// The stated reason.
    pub reason: &'a str,
    /// What was decided.
    pub action: AuditAction,
    /// What it came to.
    pub outcome: ReplayOutcome,
    /// Why it failed, if it did.
    pub error: Option<&'a Failure>,
    /// The replay-all run, if any.
    pub run_id: Option<&'a str>,
    /// The job that decided it, if any.
    pub job_id: Option<&'a str>,
    /// When.
    pub at_ms: i64,
}

/// The bound values of one record, `?1`…`?11` in the column order of
/// [`INSERT_COLUMNS`].
fn values(r: &AuditRecord<'_>) -> Vec<wasm_bindgen::JsValue> {
    vec![
        text(r.entry_id),
        opt_text(r.event_id),
        text(r.actor),
        text(r.reason),
        text(r.outcome.as_str()),
        opt_text(r.error.map(|f| f.code.as_str())),
        opt_text(r.error.map(|f| f.message.as_str())),
        opt_text(r.run_id),
        int(r.at_ms),
        text(r.action.as_str()),
        opt_text(r.job_id),
    ]
}

const INSERT_COLUMNS: &str = "INSERT INTO replay_audit (entry_id, event_id, actor, reason, outcome, error_code, error_message, run_id, at, action, job_id)";

/// The insert statement of one record, for batching with the entry update.
pub fn insert(db: &D1Database, r: &AuditRecord<'_>) -> Result<D1PreparedStatement> {
    db.prepare(format!(
        "{INSERT_COLUMNS} VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
    ))
    .bind(&values(r))
}

/// One audit record as listed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AuditRow {
    /// Row id (the cursor's tie-breaker).
    pub id: i64,
    /// The entry.
    pub entry_id: String,
    /// Its event.
    pub event_id: Option<String>,
    /// Who decided.
    pub actor: String,
    /// What was decided.
    pub action: AuditAction,
    /// The job that decided it.
    pub job_id: Option<String>,
    /// Why.
    pub reason: String,
    /// What it came to.
    pub outcome: ReplayOutcome,
    /// The failure code, if it failed.
    pub error_code: Option<String>,
    /// The failure message, if it failed.
    pub error_message: Option<String>,
    /// The replay-all run.
    pub run_id: Option<String>,
    /// When (unix ms).
    pub at: i64,
}

/// Records newest first, optionally for one entry or one job. The cursor's id is the
/// record id as text.
pub async fn list(
    db: &D1Database,
    filter: &AuditFilter,
    cursor: Option<&Cursor>,
    limit: u32,
) -> Result<Vec<AuditRow>> {
    let mut w = Where::default();
    w.eq("entry_id", filter.entry_id.as_deref())
        .eq("job_id", filter.job_id.as_deref());
    if let Some(c) = cursor {
        w.after(
            "at, id",
            "<",
            c.at_ms,
            int(c.id.parse::<i64>().unwrap_or(i64::MAX)),
        );
    }
    let (clause, limit) = w.finish(limit);
    let sql = format!(
        "SELECT id, entry_id, event_id, actor, action, job_id, reason, outcome, error_code, error_message, run_id, at FROM replay_audit {clause} ORDER BY at DESC, id DESC LIMIT {limit}"
    );
    db.prepare(sql).bind(&w.params)?.query().await?.decode()
}

/// Every decision about one event's entries, oldest first (for its story).
pub async fn for_event(db: &D1Database, event_id: &str) -> Result<Vec<AuditRow>> {
    for_event_statement(db, event_id)?.query().await?.decode()
}

/// The statement of [`for_event`], for the story batch. A record is about
/// the event when it names the event or one of the event's entries.
pub fn for_event_statement(db: &D1Database, event_id: &str) -> Result<D1PreparedStatement> {
    db.prepare("SELECT id, entry_id, event_id, actor, action, job_id, reason, outcome, error_code, error_message, run_id, at FROM replay_audit \
                WHERE event_id = ?1 OR entry_id IN (SELECT id FROM dead_letters WHERE event_id = ?1) ORDER BY at, id")
        .bind(&[text(event_id)])
}

/// The insert of one record, made only while the entry is still in
/// `status`. Batched before the guarded status update, both read the same
/// state in the batch's one transaction: either both write, or neither
/// does, so a decision that lost a race leaves no audit record behind.
pub fn insert_if_status(
    db: &D1Database,
    r: &AuditRecord<'_>,
    status: EntryStatus,
) -> Result<D1PreparedStatement> {
    insert_if_status_of(db, r, r.entry_id, status)
}

/// [`insert_if_status`] guarded by another entry's status: a restore that
/// joins the pending entry `entry` is audited only while it is still
/// pending.
pub fn insert_if_status_of(
    db: &D1Database,
    r: &AuditRecord<'_>,
    entry: &str,
    status: EntryStatus,
) -> Result<D1PreparedStatement> {
    let mut params = values(r);
    params.push(text(status.as_str()));
    params.push(text(entry));
    insert_where(
        db,
        params,
        "EXISTS (SELECT 1 FROM dead_letters WHERE id = ?13 AND status = ?12)",
    )
}

/// The insert of a restore's record, made only under the guard of the rest
/// of its write (`super::tombstones::restore_guard`: still evicted, and
/// below `capacity` when it adds a pending entry).
pub fn insert_if_evicted(
    db: &D1Database,
    r: &AuditRecord<'_>,
    capacity: Option<u64>,
) -> Result<D1PreparedStatement> {
    insert_where(
        db,
        values(r),
        &super::tombstones::restore_guard("?1", capacity),
    )
}

fn insert_where(
    db: &D1Database,
    params: Vec<wasm_bindgen::JsValue>,
    condition: &str,
) -> Result<D1PreparedStatement> {
    db.prepare(format!(
        "{INSERT_COLUMNS} SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11 WHERE {condition}"
    ))
    .bind(&params)
}

/// Counts per replay outcome (for the stats batch).
pub fn outcome_counts(db: &D1Database) -> Result<D1PreparedStatement> {
    db.prepare(
        "SELECT outcome AS k, count(*) AS n FROM replay_audit WHERE action = ?1 GROUP BY outcome",
    )
    .bind(&[text(AuditAction::Replay.as_str())])
}
