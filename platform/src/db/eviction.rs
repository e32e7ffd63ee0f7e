//! Capacity eviction of pending dead letters, in one place: which entries
//! go ([`OLDEST_PENDING`], or the ids a triage plan chose), their
//! tombstones in `dead_letter_tombstones` (written only here: what
//! eviction removed, enough to prove it happened and to match a later
//! report against it), and their deletion. A tombstone and its deletion
//! always share one batch, tombstone first.

use super::{int, text, Rows};
use hookrelay_core::state::EntryStatus;
use serde::Deserialize;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, Result};

/// The `n` oldest pending entries (`?1` = n, `?3` = the pending status):
/// the ones capacity evicts. The tombstone and the delete of
/// [`evict_oldest`] both select through it, so they pick exactly the same
/// rows in the same batch.
const OLDEST_PENDING: &str =
    "SELECT id FROM dead_letters WHERE status = ?3 ORDER BY created_at, id LIMIT ?1";

fn pending() -> JsValue {
    text(EntryStatus::Pending.as_str())
}

/// Evicts the `n` oldest pending entries, tombstone first, in one
/// transaction; answers the evicted ids. The DLQ batch's follow-up, when
/// its own evictions did not bring the depth down to capacity.
pub async fn evict_oldest(db: &D1Database, n: u64, now: i64) -> Result<Vec<String>> {
    let tombstones = db
        .prepare(format!(
            "INSERT INTO dead_letter_tombstones (id, content_hash, event_id, source, error_code, evicted_at) \
             SELECT id, content_hash, event_id, source, error_code, ?2 FROM dead_letters WHERE id IN ({OLDEST_PENDING}) \
             ON CONFLICT(id) DO UPDATE SET evicted_at = excluded.evicted_at"
        ))
        .bind(&[int(n as i64), int(now), pending()])?;
    let delete = db
        .prepare(format!(
            "DELETE FROM dead_letters WHERE id IN ({OLDEST_PENDING}) RETURNING id"
        ))
        .bind(&[int(n as i64), int(now), pending()])?;
    let results = crate::db::batch(db, vec![tombstones, delete]).await?;
    match results.last() {
        Some(deleted) => evicted_ids(deleted),
        None => Ok(Vec::new()),
    }
}

/// The tombstones, then the delete, of each pending entry in `ids` (a JSON
/// array): the ones a DLQ batch evicts, appended to its own batch. The
/// delete returns the evicted ids ([`evicted_ids`]).
pub fn evict_statements(
    db: &D1Database,
    ids: &JsValue,
    now_ms: i64,
) -> Result<[D1PreparedStatement; 2]> {
    let tombstones = db
        .prepare(
            "INSERT INTO dead_letter_tombstones (id, content_hash, event_id, source, error_code, evicted_at) \
             SELECT id, content_hash, event_id, source, error_code, ?2 FROM dead_letters WHERE id IN (SELECT value FROM json_each(?1)) AND status = ?3 \
             ON CONFLICT(id) DO UPDATE SET evicted_at = excluded.evicted_at",
        )
        .bind(&[ids.clone(), int(now_ms), pending()])?;
    let delete = db
        .prepare("DELETE FROM dead_letters WHERE id IN (SELECT value FROM json_each(?1)) AND status = ?2 RETURNING id")
        .bind(&[ids.clone(), pending()])?;
    Ok([tombstones, delete])
}

/// The ids an eviction's delete returned.
pub fn evicted_ids(deleted: &Rows) -> Result<Vec<String>> {
    #[derive(Deserialize)]
    struct Id {
        id: String,
    }
    Ok(deleted.decode::<Id>()?.into_iter().map(|r| r.id).collect())
}
