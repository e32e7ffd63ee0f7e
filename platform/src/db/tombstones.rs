//! `dead_letter_tombstones`: what capacity eviction removed, enough to
//! prove it happened and to match a later report against it.

use super::{int, text};
use hookrelay_core::state::EntryStatus;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, Result};

/// Writes a tombstone for each of the `n` oldest pending entries, the ones
/// `dead_letters::evict_oldest` then deletes in the same batch.
pub fn write_for_oldest(db: &D1Database, n: u64, now_ms: i64) -> Result<D1PreparedStatement> {
    db.prepare(format!(
        "INSERT INTO dead_letter_tombstones (id, content_hash, event_id, source, error_code, evicted_at) \
         SELECT id, content_hash, event_id, source, error_code, ?2 FROM dead_letters WHERE id IN ({}) \
         ON CONFLICT(id) DO UPDATE SET evicted_at = excluded.evicted_at",
        super::dead_letters::OLDEST_PENDING
    ))
    .bind(&[int(n as i64), int(now_ms), text(EntryStatus::Pending.as_str())])
}

/// Writes a tombstone for each pending entry in `ids` (a JSON array): the
/// ones a DLQ batch evicts, before the same batch deletes them.
pub fn write_for(db: &D1Database, ids: &JsValue, now_ms: i64) -> Result<D1PreparedStatement> {
    db.prepare(
        "INSERT INTO dead_letter_tombstones (id, content_hash, event_id, source, error_code, evicted_at) \
         SELECT id, content_hash, event_id, source, error_code, ?2 FROM dead_letters WHERE id IN (SELECT value FROM json_each(?1)) AND status = ?3 \
         ON CONFLICT(id) DO UPDATE SET evicted_at = excluded.evicted_at",
    )
    .bind(&[ids.clone(), int(now_ms), text(EntryStatus::Pending.as_str())])
}
