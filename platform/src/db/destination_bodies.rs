//! `destination_bodies`: when each queue destination's large body in R2
//! was last sent (migration 0025), the one record of how long the object
//! must stay (`hookrelay_core::deliver::queue_destination`, which decides
//! when it may go).

use super::{int, text};
use crate::db::{Query, Rows};
use hookrelay_core::state::DeliveryState;
use worker::{D1Database, D1PreparedStatement, Result};

/// Records that event `event_id`'s body is sent at `now_ms`, before its
/// put: the time only moves forward, so a late writer with an older clock
/// never shortens the hold.
pub async fn record_send(db: &D1Database, event_id: &str, now_ms: i64) -> Result<()> {
    db.prepare(
        "INSERT INTO destination_bodies (event_id, sent_at) VALUES (?1, ?2) \
         ON CONFLICT(event_id) DO UPDATE SET sent_at = max(destination_bodies.sent_at, excluded.sent_at)",
    )
    .bind(&[text(event_id), int(now_ms)])?
    .query()
    .await?;
    Ok(())
}

/// Which of `event_ids` have a record: a statement for the events sweep's
/// read batch, answered by [`read_tracked`].
pub fn tracked(db: &D1Database, event_ids: &[&str]) -> Result<D1PreparedStatement> {
    db.prepare("SELECT event_id FROM destination_bodies WHERE event_id IN (SELECT value FROM json_each(?1))")
        .bind(&[text(&serde_json::to_string(event_ids)?)])
}

/// The ids [`tracked`] found.
pub fn read_tracked(result: &Rows) -> Result<Vec<String>> {
    result.map(|r| r.text("event_id"))
}

/// Up to `limit` bodies last sent before `sent_before`, oldest first:
/// (event id, last send). A body whose event has a delivery leased is left
/// for a later run, since that delivery may be putting it again now.
pub async fn expired(db: &D1Database, sent_before: i64, limit: u32) -> Result<Vec<(String, i64)>> {
    db.prepare(
        "SELECT b.event_id, b.sent_at FROM destination_bodies b WHERE b.sent_at < ?1 \
         AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = b.event_id AND d.state = ?3) \
         ORDER BY b.sent_at LIMIT ?2",
    )
    .bind(&[
        int(sent_before),
        int(i64::from(limit)),
        text(DeliveryState::Delivering.as_str()),
    ])?
    .query()
    .await?
    .map(|r| Ok((r.text("event_id")?, r.int("sent_at")?)))
}

/// Drops the records of `event_ids` whose objects were deleted, unless one
/// was sent again since (its time moved past `sent_before`).
pub async fn forget(db: &D1Database, event_ids: &[&str], sent_before: i64) -> Result<()> {
    db.prepare("DELETE FROM destination_bodies WHERE event_id IN (SELECT value FROM json_each(?1)) AND sent_at < ?2")
        .bind(&[text(&serde_json::to_string(event_ids)?), int(sent_before)])?
        .query()
        .await?;
    Ok(())
}
