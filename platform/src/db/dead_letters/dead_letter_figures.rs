//! The watchdog's reads of `dead_letters` (DESIGN §5, Alarms): each one
//! statement over an index, batched by the caller with the other figures.

use super::pending;
use crate::db::{int, Rows};
use worker::{D1Database, D1PreparedStatement, Result};

/// Pending entries and the oldest one: `n`, `oldest` (its `created_at`)
/// and `id` (SQLite takes a bare column from the row `min` chose).
pub fn pending_and_oldest(db: &D1Database) -> Result<D1PreparedStatement> {
    db.prepare(
        "SELECT count(*) AS n, min(created_at) AS oldest, id FROM dead_letters WHERE status = ?1",
    )
    .bind(&[pending()])
}

/// Dead letters that arrived (stored, or joining a pending entry) from
/// bucket `first_minute` on (`hookrelay_core::dead_letter::arrivals`), by
/// code, largest first (`k`, `n`).
pub fn ingress_by_code(db: &D1Database, first_minute: i64) -> Result<D1PreparedStatement> {
    db.prepare(
        "SELECT error_code AS k, sum(n) AS n FROM dead_letter_arrivals WHERE minute >= ?1 \
         GROUP BY error_code ORDER BY n DESC, error_code",
    )
    .bind(&[int(first_minute)])
}

/// The answer to [`pending_and_oldest`]: the count and the oldest entry.
pub fn read_pending(rows: &Rows) -> Result<(u64, Option<(String, i64)>)> {
    let first = rows.map_first(|r| {
        let oldest = match (r.opt_text("id")?, r.opt_int("oldest")?) {
            (Some(id), Some(at)) => Some((id, at)),
            _ => None,
        };
        Ok((r.int("n")?.max(0) as u64, oldest))
    })?;
    Ok(first.unwrap_or((0, None)))
}

/// The answer to [`ingress_by_code`]: the total and the dominant code.
pub fn read_ingress(rows: &Rows) -> Result<(u64, Option<(String, u64)>)> {
    let by_code = rows.map(|r| {
        Ok((
            r.opt_text("k")?.unwrap_or_default(),
            r.int("n")?.max(0) as u64,
        ))
    })?;
    let total = by_code.iter().map(|(_, n)| n).sum();
    Ok((total, by_code.into_iter().next()))
}
