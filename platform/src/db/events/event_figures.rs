//! The watchdog's reads of `events` (DESIGN §5, Alarms): parked deliveries
//! per destination (`deliveries_parked`), and a source's newest event
//! (`events_by_source_time`).

use crate::db::{text, Rows};
use hookrelay_core::state::DeliveryState;
use worker::{D1Database, D1PreparedStatement, Result};

/// Parked events per destination: `destination`, `n`, `oldest` (its
/// `parked_at`) and `event_id` (the row `min` chose).
pub fn parked_oldest(db: &D1Database) -> Result<D1PreparedStatement> {
    db.prepare(
        "SELECT destination, count(*) AS n, min(parked_at) AS oldest, event_id \
         FROM deliveries WHERE state = ?1 GROUP BY destination ORDER BY destination LIMIT 100",
    )
    .bind(&[text(DeliveryState::Parked.as_str())])
}

/// The newest `ingested_at` of `source` (`last`, NULL when none).
pub fn last_received(db: &D1Database, source: &str) -> Result<D1PreparedStatement> {
    db.prepare("SELECT max(ingested_at) AS last FROM events WHERE source = ?1")
        .bind(&[text(source)])
}

/// One row of [`parked_oldest`]: destination, count, oldest event id, parked at.
pub type ParkedRow = (String, u64, String, i64);

/// The answer to [`parked_oldest`].
pub fn read_parked(rows: &Rows) -> Result<Vec<ParkedRow>> {
    rows.map(|r| {
        Ok((
            r.opt_text("destination")?.unwrap_or_default(),
            r.int("n")?.max(0) as u64,
            r.text("event_id")?,
            r.opt_int("oldest")?.unwrap_or(0),
        ))
    })
}

/// The answer to [`last_received`].
pub fn read_last(rows: &Rows) -> Result<Option<i64>> {
    Ok(rows.map_first(|r| r.opt_int("last"))?.flatten())
}
