//! `swept_events`: the events the retention sweep deleted, each with the
//! archive key of the object that holds it, kept for one `EVENT_RETENTION`
//! (`hookrelay_core::retention::plan::SweepRun::swept_pointers_from`), so
//! the story of a swept event answers with its key even when no dead
//! letter in D1 names it (DESIGN §4).

use super::{int, text};
use worker::{D1Database, D1PreparedStatement, Result};

/// Remembers the events of `event_ids` that are no longer in `events` (the
/// delete before it in the same batch removed them; one the guard kept
/// stays unnamed) as archived under `key` at `now`.
pub fn remember(
    db: &D1Database,
    event_ids: &[&str],
    key: &str,
    now: i64,
) -> Result<D1PreparedStatement> {
    db.prepare(
        "INSERT OR REPLACE INTO swept_events (event_id, archive_key, swept_at) \
         SELECT value, ?2, ?3 FROM json_each(?1) \
         WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.event_id = value)",
    )
    .bind(&[
        text(&serde_json::to_string(event_ids)?),
        text(key),
        int(now),
    ])
}

/// Forgets the events swept before `from`.
pub fn forget_before(db: &D1Database, from: i64) -> Result<D1PreparedStatement> {
    db.prepare("DELETE FROM swept_events WHERE swept_at < ?1")
        .bind(&[int(from)])
}

/// The archive key of swept event `event_id` (`key`), if it is remembered
/// (a statement for its story).
pub fn archive_key(db: &D1Database, event_id: &str) -> Result<D1PreparedStatement> {
    db.prepare("SELECT archive_key AS key FROM swept_events WHERE event_id = ?1")
        .bind(&[text(event_id)])
}
