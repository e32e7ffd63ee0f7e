//! `dead_letter_tombstones` as the admin API reads it: an entry that left
//! D1 for the archive (a capacity eviction, or a retention sweep) answers
//! as `evicted` from its tombstone, and a restore removes it. Tombstones
//! are written where entries leave D1 (`super::eviction`, and the sweep).

use super::{int, text, Rows, Where};
use crate::db::Query;
use hookrelay_core::admin::query::Cursor;
use hookrelay_core::retention::restore::Tombstone;
use hookrelay_core::state::{EntryStatus, TombstoneCause};
use serde::{Deserialize, Serialize};
use worker::{D1Database, D1PreparedStatement, Result};

/// One tombstone, as the admin API shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TombstoneRow {
    /// The entry's id.
    pub id: String,
    /// The entry's dedupe key.
    pub content_hash: String,
    /// Its event, if it named one.
    pub event_id: Option<String>,
    /// Its source.
    pub source: Option<String>,
    /// Its root-cause code.
    pub error_code: String,
    /// When it left D1 (unix ms), whichever the cause.
    pub evicted_at: i64,
    /// Evicted at capacity, or swept by retention.
    pub cause: TombstoneCause,
    /// For a swept entry, the status it had.
    pub prior_status: Option<EntryStatus>,
    /// The R2 key of its archived envelope (none before the archive existed).
    pub archive_key: Option<String>,
}

impl TombstoneRow {
    /// The restore rules' view of it.
    pub fn tombstone(&self) -> Tombstone {
        Tombstone {
            id: self.id.clone(),
            cause: self.cause,
            prior_status: self.prior_status,
            archive_key: self.archive_key.clone(),
        }
    }
}

const COLUMNS: &str =
    "id, content_hash, event_id, source, error_code, evicted_at, cause, prior_status, archive_key";

/// The tombstone of entry `id` (a statement, for a batch).
pub fn get_statement(db: &D1Database, id: &str) -> Result<D1PreparedStatement> {
    db.prepare(format!(
        "SELECT {COLUMNS} FROM dead_letter_tombstones WHERE id = ?1"
    ))
    .bind(&[text(id)])
}

/// The tombstone of entry `id`, if it has one.
pub async fn get(db: &D1Database, id: &str) -> Result<Option<TombstoneRow>> {
    get_statement(db, id)?.query().await?.first()
}

/// Tombstones newest first (by when the entry left D1), after `cursor`, at
/// most `limit + 1` rows.
pub async fn list(
    db: &D1Database,
    cursor: Option<&Cursor>,
    limit: u32,
) -> Result<Vec<TombstoneRow>> {
    let mut w = Where::default();
    if let Some(c) = cursor {
        w.after("evicted_at, id", "<", c.at_ms, text(&c.id));
    }
    let (clause, limit) = w.finish(limit);
    let sql = format!("SELECT {COLUMNS} FROM dead_letter_tombstones {clause} ORDER BY evicted_at DESC, id DESC LIMIT {limit}");
    db.prepare(sql).bind(&w.params)?.query().await?.decode()
}

/// The guard of every statement of a restore's write: entry `{id}` (a SQL
/// expression, e.g. a bound parameter) still has its tombstone and no entry
/// has taken its id, as the restore's read saw.
pub fn still_evicted(id: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM dead_letter_tombstones WHERE id = {id}) \
         AND NOT EXISTS (SELECT 1 FROM dead_letters WHERE id = {id})"
    )
}

/// The guard of a restore's write ([`still_evicted`]), and for a restore
/// that adds a pending entry, fewer than `capacity` pending entries as the
/// statement runs: D1 runs one write at a time, so of restores that all
/// passed the read's count, only those that still fit write
/// (`hookrelay_core::retention::restore::check_insert`). The capacity is
/// a number from the configuration, never request text.
pub fn restore_guard(id: &str, capacity: Option<u64>) -> String {
    let mut guard = still_evicted(id);
    if let Some(capacity) = capacity {
        guard.push_str(&format!(
            " AND (SELECT count(*) FROM dead_letters WHERE status = '{}') < {capacity}",
            EntryStatus::Pending.as_str()
        ));
    }
    guard
}

/// The read that closes a restore's batch, in its transaction: pending
/// entries (`pending`) and whether entry `id` is still evicted
/// (`still_evicted`, 1 or 0), which tell a write the capacity guard
/// refused from one another writer overtook.
pub fn after_restore(db: &D1Database, id: &str) -> Result<D1PreparedStatement> {
    db.prepare(format!(
        "SELECT (SELECT count(*) FROM dead_letters WHERE status = ?2) AS pending, ({}) AS still_evicted",
        still_evicted("?1")
    ))
    .bind(&[text(id), text(EntryStatus::Pending.as_str())])
}

/// Removes the tombstone of entry `id` if the statement just before it in
/// the batch (the restored entry's guarded insert) wrote its row: D1 runs a
/// batch's statements in order in one transaction, so `changes()` is that
/// insert's, and a restore that lost a race removes nothing.
pub fn delete_after_restore(db: &D1Database, id: &str) -> Result<D1PreparedStatement> {
    db.prepare("DELETE FROM dead_letter_tombstones WHERE id = ?1 AND changes() = 1")
        .bind(&[text(id)])
}

/// Entries evicted at capacity since `since` (`n`), over `tombstones_by_time`
/// (the watchdog's `dlq_capacity` figure).
pub fn evicted_since(db: &D1Database, since: i64) -> Result<D1PreparedStatement> {
    db.prepare(
        "SELECT count(*) AS n FROM dead_letter_tombstones WHERE evicted_at >= ?1 AND cause = ?2",
    )
    .bind(&[int(since), text(TombstoneCause::Evicted.as_str())])
}

/// The answer to [`evicted_since`]: a count always has its one row.
pub fn read_count(rows: &Rows) -> Result<u64> {
    Ok(rows.map_first(|r| r.int("n"))?.unwrap_or(0).max(0) as u64)
}
