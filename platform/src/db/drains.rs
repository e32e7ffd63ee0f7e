//! `drains`: one row per destination that has parked events. `generation`
//! fences the chain of `hookrelay-control` messages that advances it: each
//! step claims the row by moving the generation on, so a stale, duplicated
//! or resent message finds a different generation and does nothing.

use super::{changes, int, opt_text, text};
use crate::db::{Query, Rows};
use hookrelay_core::state::error_code::ErrorCode;
use hookrelay_core::state::DeliveryState;
use worker::{D1Database, D1PreparedStatement, Result};

/// Makes sure `destination` has a drain. Answers the generation of the
/// message to send: a new row starts at 1; a row whose step was due before
/// `stale_before_ms` (its chain was lost) moves on a generation and is
/// answered too; a live chain answers `None` and needs no message. `cause`
/// (the breaker's) is kept, unless it is unknown.
pub async fn ensure(
    db: &D1Database,
    destination: &str,
    cause: Option<ErrorCode>,
    next_step_at_ms: i64,
    stale_before_ms: i64,
    now_ms: i64,
) -> Result<Option<i64>> {
    let row = db
        .prepare(
            "INSERT INTO drains (destination, generation, next_step_at, updated_at, cause) VALUES (?1, 1, ?2, ?3, ?5) \
             ON CONFLICT(destination) DO UPDATE SET generation = drains.generation + 1, next_step_at = excluded.next_step_at, \
             updated_at = excluded.updated_at, cause = COALESCE(excluded.cause, drains.cause) \
             WHERE drains.next_step_at < ?4 RETURNING generation",
        )
        .bind(&[
            text(destination),
            int(next_step_at_ms),
            int(now_ms),
            int(stale_before_ms),
            opt_text(cause.map(ErrorCode::as_str)),
        ])?
        .query()
        .await?
        .map_first(|r| r.int("generation"))?;
    Ok(row)
}

/// A drain for each destination that the copy of the legacy events of
/// `ids_json` (a JSON array of event ids) gave a parked row: the statement
/// `deliveries::copy_legacy` runs between its copy and its mark (the
/// events are still `routed_at` NULL then), so the copy and the drain are
/// one transaction and no copy path can leave a parked row without one.
/// A destination that already has a drain keeps it (a lost chain is the
/// resume check's). Answers the drains it started ([`read_started`]),
/// whose first step the caller sends; should that send fail, the row is
/// due at `now_ms` and the resume check sends it once it is stale.
pub fn start_for_legacy_parked(
    db: &D1Database,
    ids_json: &str,
    now_ms: i64,
) -> Result<D1PreparedStatement> {
    db.prepare(
        "INSERT OR IGNORE INTO drains (destination, generation, next_step_at, updated_at) \
         SELECT DISTINCT d.destination, 1, ?2, ?2 FROM deliveries d \
         WHERE d.state = ?3 AND d.event_id IN \
         (SELECT e.event_id FROM events e WHERE e.event_id IN (SELECT value FROM json_each(?1)) AND e.routed_at IS NULL) \
         RETURNING destination, generation",
    )
    .bind(&[
        text(ids_json),
        int(now_ms),
        text(DeliveryState::Parked.as_str()),
    ])
}

/// The drains [`start_for_legacy_parked`] started: (destination,
/// generation) each, whose first step is still to send.
pub fn read_started(result: &Rows) -> Result<Vec<(String, i64)>> {
    result.map(|r| Ok((r.text("destination")?, r.int("generation")?)))
}

/// Which of `destinations` have a drain: a statement for a read batch,
/// answered by [`parse_active`].
pub fn active(db: &D1Database, destinations: &[&str]) -> Result<D1PreparedStatement> {
    let list = serde_json::to_string(destinations)?;
    db.prepare(
        "SELECT destination, cause FROM drains WHERE destination IN (SELECT value FROM json_each(?1))",
    )
    .bind(&[text(&list)])
}

/// The destinations [`active`] found, each with the cause its drain recorded.
pub fn parse_active(result: &Rows) -> Result<Vec<(String, Option<ErrorCode>)>> {
    result.map(|r| {
        let cause = r.opt_text("cause")?;
        Ok((
            r.text("destination")?,
            cause.as_deref().and_then(ErrorCode::parse),
        ))
    })
}

/// Records the failure that re-opened the breaker mid-drain, the root
/// cause of the events parked behind the drain from now on.
pub async fn set_cause(db: &D1Database, destination: &str, cause: ErrorCode) -> Result<()> {
    db.prepare("UPDATE drains SET cause = ?2 WHERE destination = ?1")
        .bind(&[text(destination), text(cause.as_str())])?
        .query()
        .await?;
    Ok(())
}

/// Claims step `generation` of `destination`'s drain: moves the row to the
/// next generation and marks the step busy until `busy_until_ms`. `false`
/// means the message is stale (or the drain is gone) and must do nothing.
pub async fn claim_step(
    db: &D1Database,
    destination: &str,
    generation: i64,
    busy_until_ms: i64,
    now_ms: i64,
) -> Result<bool> {
    let result = db
        .prepare("UPDATE drains SET generation = generation + 1, next_step_at = ?3, updated_at = ?4 WHERE destination = ?1 AND generation = ?2")
        .bind(&[text(destination), int(generation), int(busy_until_ms), int(now_ms)])?
        .query()
        .await?;
    Ok(changes(&result) > 0)
}

/// Records when the step of `generation` (already claimed) is due, just
/// before its message is sent; whether this chain still owns the row.
pub async fn schedule(
    db: &D1Database,
    destination: &str,
    generation: i64,
    due_at_ms: i64,
    now_ms: i64,
) -> Result<bool> {
    let result = db
        .prepare("UPDATE drains SET next_step_at = ?3, updated_at = ?4 WHERE destination = ?1 AND generation = ?2")
        .bind(&[text(destination), int(generation), int(due_at_ms), int(now_ms)])?
        .query()
        .await?;
    Ok(changes(&result) > 0)
}

/// Ends `destination`'s drain, unless a delivery was parked for it meanwhile
/// (then the row stays and the caller schedules another step); whether it
/// ended. One statement, so a park racing with the end is never orphaned:
/// either its event is seen here, or its own `ensure` finds no row.
pub async fn finish(db: &D1Database, destination: &str, generation: i64) -> Result<bool> {
    let result = db
        .prepare(
            "DELETE FROM drains WHERE destination = ?1 AND generation = ?2 \
             AND NOT EXISTS (SELECT 1 FROM deliveries WHERE destination = ?1 AND state = ?3)",
        )
        .bind(&[
            text(destination),
            int(generation),
            text(DeliveryState::Parked.as_str()),
        ])?
        .query()
        .await?;
    Ok(changes(&result) > 0)
}

/// Drains whose step was due before `stale_before_ms` (their chain was
/// lost), each moved on a generation so the old chain, if it still
/// exists, goes stale. Answers (destination, new generation).
pub async fn revive_stale(
    db: &D1Database,
    stale_before_ms: i64,
    now_ms: i64,
    limit: u32,
) -> Result<Vec<(String, i64)>> {
    db.prepare(
        "UPDATE drains SET generation = generation + 1, next_step_at = ?2, updated_at = ?2 \
         WHERE destination IN (SELECT destination FROM drains WHERE next_step_at < ?1 ORDER BY next_step_at LIMIT ?3) \
         RETURNING destination, generation",
    )
    .bind(&[int(stale_before_ms), int(now_ms), int(i64::from(limit))])?
    .query()
    .await?
    .map(|r| Ok((r.text("destination")?, r.int("generation")?)))
}
