//! `job_entries`: the fixed set of a job, one row per entry, with its place
//! in line and what came of it. The set is written once, when the job is
//! created, from the same selection its dry run reads.

use super::dead_letters::filtered;
use super::{int, text, Where};
use crate::db::Query;
use hookrelay_core::jobs::canary::SignatureGroup;
use hookrelay_core::jobs::JobFilter;
use hookrelay_core::state::{EntryStatus, JobEntryOutcome, JobEntryState, ReplayOutcome};
use serde::{Deserialize, Serialize};
use worker::{D1Database, D1PreparedStatement, Result};

/// The states of an entry whose turn has not come, and of one handled.
const PENDING: JobEntryState = JobEntryState::Pending;
const DONE: JobEntryState = JobEntryState::Done;

/// The job's selection over `dead_letters`, frozen at `as_of`: entries that
/// arrive later are not in the set.
fn selection(filter: &JobFilter, as_of: i64) -> Where {
    let mut w = Where::default();
    filtered(&mut w, &filter.entries);
    w.cmp_int("created_at", ">=", filter.since_ms)
        .cmp_int("created_at", "<=", filter.until_ms)
        .cmp_int("created_at", "<=", Some(as_of));
    w
}

/// What a dry run (and a job's creation) reads about the set.
#[derive(Debug, Default, Serialize)]
pub struct SetSummary {
    /// Entries in the set.
    pub matched: u64,
    /// Per error signature, with its oldest entry (for the canary).
    pub groups: Vec<SignatureGroupRow>,
    /// Per source.
    pub by_source: Vec<SourceCount>,
    /// The set's oldest entries, oldest first (to fill the canary).
    pub oldest: Vec<String>,
}

/// One signature group of the set.
#[derive(Debug, Deserialize, Serialize)]
pub struct SignatureGroupRow {
    /// `sig_…`.
    pub signature: String,
    /// Its code.
    pub code: String,
    /// Entries.
    pub count: u64,
    /// Its oldest entry.
    #[serde(skip_serializing)]
    pub oldest_id: String,
}

impl SignatureGroupRow {
    /// As the core's canary composition reads it.
    pub fn group(&self) -> SignatureGroup {
        SignatureGroup {
            signature: self.signature.clone(),
            count: self.count,
            oldest_id: self.oldest_id.clone(),
        }
    }
}

/// One source of the set.
#[derive(Debug, Deserialize, Serialize)]
pub struct SourceCount {
    /// The source (empty when the message named none).
    pub source: Option<String>,
    /// Entries.
    pub count: u64,
}

/// Reads the set's summary in one round trip.
pub async fn summarize(
    db: &D1Database,
    filter: &JobFilter,
    as_of: i64,
    oldest: u32,
) -> Result<SetSummary> {
    let w = selection(filter, as_of);
    let clause = w.clause();
    // The oldest entry of each group, ties broken by id, so a dry run and
    // the job it previews pick the same canary.
    let groups = format!("SELECT error_signature AS signature, error_code AS code, count(*) AS count, substr(min(printf('%020d', created_at) || id), 21) AS oldest_id FROM dead_letters {clause} GROUP BY error_signature ORDER BY count DESC, signature");
    let sources = format!("SELECT source, count(*) AS count FROM dead_letters {clause} GROUP BY source ORDER BY count DESC, source");
    let oldest_sql =
        format!("SELECT id FROM dead_letters {clause} ORDER BY created_at, id LIMIT {oldest}");
    let results = crate::db::batch(
        db,
        vec![
            db.prepare(groups).bind(&w.params)?,
            db.prepare(sources).bind(&w.params)?,
            db.prepare(oldest_sql).bind(&w.params)?,
        ],
    )
    .await?;
    #[derive(Deserialize)]
    struct Id {
        id: String,
    }
    let groups: Vec<SignatureGroupRow> = results[0].decode()?;
    Ok(SetSummary {
        matched: groups.iter().map(|g| g.count).sum(),
        groups,
        by_source: results[1].decode()?,
        oldest: results[2]
            .decode::<Id>()?
            .into_iter()
            .map(|r| r.id)
            .collect(),
    })
}

/// Writes the whole set in one statement, oldest first.
pub fn insert_set(
    db: &D1Database,
    job_id: &str,
    filter: &JobFilter,
    as_of: i64,
) -> Result<D1PreparedStatement> {
    let mut w = selection(filter, as_of);
    let job = w.bind(text(job_id));
    let pending = w.bind(text(PENDING.as_str()));
    let sql = format!(
        "INSERT INTO job_entries (job_id, entry_id, seq, in_canary, content_hash, state) \
         SELECT {job}, id, ROW_NUMBER() OVER (ORDER BY created_at, id), 0, content_hash, {pending} FROM dead_letters {}",
        w.clause()
    );
    db.prepare(sql).bind(&w.params)
}

/// Moves the canary entries to the front of the line, in canary order.
pub fn mark_canary(
    db: &D1Database,
    job_id: &str,
    ids: &[String],
) -> Result<Vec<D1PreparedStatement>> {
    ids.iter()
        .enumerate()
        .map(|(i, id)| {
            db.prepare("UPDATE job_entries SET in_canary = 1, seq = ?3 WHERE job_id = ?1 AND entry_id = ?2")
                .bind(&[text(job_id), text(id), int(i as i64 - ids.len() as i64)])
        })
        .collect()
}

/// One entry whose turn has come.
#[derive(Debug, Clone, Deserialize)]
pub struct NextEntry {
    /// The dead-letter entry.
    pub entry_id: String,
    /// Whether it is in the canary.
    pub in_canary: i64,
    /// SHA-256 of its source and payload.
    pub content_hash: String,
    /// Whether an identical payload already succeeded in this job.
    pub duplicate: i64,
    /// What this job already did to the entry, by its audit record (written
    /// with the entry's change in one transaction), when a step handled it
    /// but failed before recording it here: it is not done again.
    pub audited: Option<ReplayOutcome>,
}

/// The next `limit` pending entries in line (canary entries only, if asked).
/// The duplicate check goes through `dead_letters_by_hash` (an identical
/// payload this job replayed is a `replayed` entry with the same hash), so
/// each entry costs an index lookup, not a scan of the job's whole set; the
/// audit lookup goes through `replay_audit_by_entry` (`+a.job_id` keeps the
/// planner off `replay_audit_by_job`, which would scan the job's records).
pub async fn next(
    db: &D1Database,
    job_id: &str,
    canary_only: bool,
    limit: u32,
) -> Result<Vec<NextEntry>> {
    db.prepare("SELECT je.entry_id, je.in_canary, je.content_hash, EXISTS (SELECT 1 FROM dead_letters x JOIN job_entries d ON d.job_id = je.job_id AND d.entry_id = x.id WHERE x.content_hash = je.content_hash AND x.status = ?6 AND d.outcome = ?4) AS duplicate, \
                (SELECT a.outcome FROM replay_audit a WHERE a.entry_id = je.entry_id AND +a.job_id = je.job_id ORDER BY a.at DESC, a.id DESC LIMIT 1) AS audited \
                FROM job_entries je WHERE je.job_id = ?1 AND je.state = ?2 AND je.in_canary >= ?3 ORDER BY je.seq LIMIT ?5")
        .bind(&[
            text(job_id),
            text(PENDING.as_str()),
            int(i64::from(canary_only)),
            text(JobEntryOutcome::Succeeded.as_str()),
            int(i64::from(limit)),
            text(EntryStatus::Replayed.as_str()),
        ])?
        .query()
        .await?
        .decode()
}

/// Records what came of one entry, once: an entry already done keeps its
/// first outcome (see [`super::jobs::add_outcomes`], which counts it).
pub fn done(
    db: &D1Database,
    job_id: &str,
    entry_id: &str,
    outcome: JobEntryOutcome,
) -> Result<D1PreparedStatement> {
    db.prepare(
        "UPDATE job_entries SET state = ?3, outcome = ?4 WHERE job_id = ?1 AND entry_id = ?2 AND state = ?5",
    )
    .bind(&[
        text(job_id),
        text(entry_id),
        text(DONE.as_str()),
        text(outcome.as_str()),
        text(PENDING.as_str()),
    ])
}

/// One canary entry and its outcome so far.
#[derive(Debug, Clone, Deserialize)]
pub struct CanaryEntry {
    /// The entry.
    pub entry_id: String,
    /// What came of it, once done.
    pub outcome: Option<JobEntryOutcome>,
}

/// The canary entries, in canary order. They are the only ones with a
/// negative `seq` ([`mark_canary`]), so `job_entries_next` finds them
/// without a scan of the job's whole set.
pub async fn canary(db: &D1Database, job_id: &str) -> Result<Vec<CanaryEntry>> {
    db.prepare("SELECT entry_id, outcome FROM job_entries WHERE job_id = ?1 AND state IN (?2, ?3) AND seq < 0 AND in_canary = 1 ORDER BY seq")
        .bind(&[text(job_id), text(PENDING.as_str()), text(DONE.as_str())])?
        .query()
        .await?
        .decode()
}
