//! `payloads`: claim-checked bodies, too large for a queue message, written
//! before the event is enqueued.

use super::{int, text};
use crate::db::{Query, Row, Rows};
use hookrelay_core::support::vec_map::VecMap;
use worker::{D1Database, D1PreparedStatement, Result};

/// Stores a body keyed by event id. A repeated delivery of the same event
/// finds the row already there.
pub async fn store(
    db: &D1Database,
    event_id: &str,
    source: &str,
    body: &str,
    now_ms: i64,
) -> Result<()> {
    db.prepare("INSERT INTO payloads (event_id, source, body, body_bytes, created_at) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(event_id) DO NOTHING")
        .bind(&[text(event_id), text(source), text(body), int(body.len() as i64), int(now_ms)])?
        .query()
        .await?;
    Ok(())
}

/// Bodies by event id, in one round trip.
pub async fn load_many(db: &D1Database, event_ids: &[&str]) -> Result<VecMap<String, String>> {
    if event_ids.is_empty() {
        return Ok(VecMap::new());
    }
    let stmts = event_ids
        .iter()
        .map(|id| {
            db.prepare("SELECT event_id, body FROM payloads WHERE event_id = ?1")
                .bind(&[text(id)])
        })
        .collect::<Result<Vec<_>>>()?;
    let mut out = VecMap::new();
    for result in crate::db::batch(db, stmts).await? {
        out.extend(result.map(id_and_body)?);
    }
    Ok(out)
}

/// The bodies claim-checked under `event_ids`, one statement for a whole
/// DLQ batch; read it with [`bodies_of`].
pub fn bodies_statement(db: &D1Database, event_ids: &[&str]) -> Result<D1PreparedStatement> {
    let ids = serde_json::to_string(event_ids)?;
    db.prepare(
        "SELECT event_id, body FROM payloads WHERE event_id IN (SELECT value FROM json_each(?1))",
    )
    .bind(&[text(&ids)])
}

/// Bodies by event id, from [`bodies_statement`]'s result.
pub fn bodies_of(result: &Rows) -> Result<VecMap<String, String>> {
    Ok(result.map(id_and_body)?.into_iter().collect())
}

fn id_and_body(row: &Row<'_>) -> Result<(String, String)> {
    Ok((row.text("event_id")?, row.text("body")?))
}

/// One body, if it is still stored.
pub async fn load(db: &D1Database, event_id: &str) -> Result<Option<String>> {
    db.prepare("SELECT body FROM payloads WHERE event_id = ?1")
        .bind(&[text(event_id)])?
        .query()
        .await?
        .map_first(|r| r.text("body"))
}
