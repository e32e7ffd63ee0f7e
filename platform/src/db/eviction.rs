//! Capacity eviction of pending dead letters, in one place: which entries
//! go (the oldest pending by `dead_letters::EVICTION_ORDER`, or the ids a triage plan chose), the read of
//! their whole rows (and claim-checked payloads) for the archive copy the
//! eviction writes first (DESIGN §4), their tombstones in
//! `dead_letter_tombstones` (cause `evicted`, naming that copy's key), and
//! their deletion. A tombstone and its deletion always share one batch,
//! tombstone first, and only an entry whose copy was written is in it.

use super::dead_letters::EVICTION_ORDER;
use super::{int, text, Rows};
use hookrelay_core::retention::entry_archive::{EntryArchive, BODY_REF_SQL};
use hookrelay_core::retention::ndjson::Row;
use hookrelay_core::state::{EntryStatus, TombstoneCause};
use serde::Deserialize;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, Result};

/// The `n` oldest pending entries (`?1` = n, `?3` = the pending status) by
/// [`EVICTION_ORDER`]: the ones capacity evicts when the batch's plan did
/// not name them.
fn oldest_pending() -> String {
    format!("SELECT id FROM dead_letters WHERE status = ?3 ORDER BY {EVICTION_ORDER} LIMIT ?1")
}

/// The pending entries an eviction takes.
pub enum Evictees<'a> {
    /// These ids (a triage plan's choice).
    Ids(&'a [String]),
    /// The `n` oldest (the follow-up after a batch).
    Oldest(u64),
}

impl Evictees<'_> {
    /// `?1` of [`oldest_pending`] or of the id list.
    fn param(&self) -> JsValue {
        match self {
            Evictees::Ids(ids) => text(&serde_json::to_string(ids).unwrap_or_else(|_| "[]".into())),
            Evictees::Oldest(n) => int(*n as i64),
        }
    }

    fn selector(&self) -> String {
        match self {
            Evictees::Ids(_) => "SELECT value FROM json_each(?1)".to_string(),
            Evictees::Oldest(_) => oldest_pending(),
        }
    }
}

fn pending() -> JsValue {
    text(EntryStatus::Pending.as_str())
}

/// The read before an eviction, in the order [`rows_of`] reads it: the
/// whole rows of the evictees still pending, and every `payloads` row one
/// of their envelopes refers to, or one of `body_refs` names (the bodies
/// of entries this batch inserts and evicts at once, not yet in D1).
pub fn read_statements(
    db: &D1Database,
    evictees: &Evictees<'_>,
    body_refs: &[&str],
) -> Result<[D1PreparedStatement; 2]> {
    let sel = evictees.selector();
    let refs = text(&serde_json::to_string(body_refs).unwrap_or_else(|_| "[]".into()));
    let params = [evictees.param(), refs, pending()];
    let entries = db
        .prepare(format!(
            "SELECT * FROM dead_letters WHERE id IN ({sel}) AND status = ?3 ORDER BY {EVICTION_ORDER}"
        ))
        .bind(&params)?;
    let payloads = db
        .prepare(format!(
            "SELECT * FROM payloads WHERE event_id IN (SELECT value FROM json_each(?2)) \
             OR event_id IN (SELECT {BODY_REF_SQL} FROM dead_letters WHERE id IN ({sel}) AND status = ?3)"
        ))
        .bind(&params)?;
    Ok([entries, payloads])
}

/// Every row of a `SELECT *`, column name to value as D1 gave it.
pub fn rows_of(result: &Rows) -> Result<Vec<Row>> {
    result.json_objects()
}

/// The tombstones, the archive's totals, then the delete, of each pending
/// entry of `archived` (their copies are written): appended to a DLQ
/// batch's own write, or run alone. The delete, last, returns the evicted
/// ids ([`evicted_ids`]).
pub fn evict_statements(
    db: &D1Database,
    archived: &[EntryArchive],
    now_ms: i64,
) -> Result<[D1PreparedStatement; 3]> {
    let pairs: Vec<serde_json::Value> = archived
        .iter()
        .map(|a| serde_json::json!([a.id, a.key, a.objects.len()]))
        .collect();
    let pairs = text(&serde_json::to_string(&pairs).unwrap_or_else(|_| "[]".into()));
    let tombstones = db
        .prepare(
            "INSERT INTO dead_letter_tombstones (id, content_hash, event_id, source, error_code, evicted_at, cause, prior_status, archive_key) \
             SELECT d.id, d.content_hash, d.event_id, d.source, d.error_code, ?2, ?4, NULL, a.value->>1 \
             FROM json_each(?1) AS a JOIN dead_letters d ON d.id = a.value->>0 WHERE d.status = ?3 \
             ON CONFLICT(id) DO UPDATE SET evicted_at = excluded.evicted_at, cause = excluded.cause, prior_status = NULL, archive_key = excluded.archive_key",
        )
        .bind(&[pairs.clone(), int(now_ms), pending(), text(TombstoneCause::Evicted.as_str())])?;
    let counted = super::sweep_state::count_entries_archived(
        db,
        pairs.clone(),
        now_ms,
        text(TombstoneCause::Evicted.as_str()),
    )?;
    let delete = db
        .prepare("DELETE FROM dead_letters WHERE id IN (SELECT value->>0 FROM json_each(?1)) AND status = ?2 RETURNING id")
        .bind(&[pairs, pending()])?;
    Ok([tombstones, counted, delete])
}

/// Evicts the entries of `archived` on their own, tombstone first, in one
/// transaction; answers the evicted ids. The DLQ batch's follow-up, when
/// its own evictions did not bring the depth down to capacity.
pub async fn evict_archived(
    db: &D1Database,
    archived: &[EntryArchive],
    now: i64,
) -> Result<Vec<String>> {
    let results = crate::db::batch(db, evict_statements(db, archived, now)?.to_vec()).await?;
    match results.last() {
        Some(deleted) => evicted_ids(deleted),
        None => Ok(Vec::new()),
    }
}

/// The ids an eviction's delete returned.
pub fn evicted_ids(deleted: &Rows) -> Result<Vec<String>> {
    #[derive(Deserialize)]
    struct Id {
        id: String,
    }
    Ok(deleted.decode::<Id>()?.into_iter().map(|r| r.id).collect())
}
