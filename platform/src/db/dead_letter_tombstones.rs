//! `dead_letter_tombstones`: what the watchdog reads of them.

use super::{int, text, Rows};
use hookrelay_core::state::TombstoneCause;
use worker::{D1Database, D1PreparedStatement, Result};

/// Entries evicted at capacity since `since` (`n`), over `tombstones_by_time`.
pub fn evicted_since(db: &D1Database, since: i64) -> Result<D1PreparedStatement> {
    db.prepare(
        "SELECT count(*) AS n FROM dead_letter_tombstones WHERE evicted_at >= ?1 AND cause = ?2",
    )
    .bind(&[int(since), text(TombstoneCause::Evicted.as_str())])
}

/// The answer to [`evicted_since`].
pub fn read_count(rows: &Rows) -> Result<u64> {
    Ok(rows.map_first(|r| r.int("n"))?.unwrap_or(0).max(0) as u64)
}
