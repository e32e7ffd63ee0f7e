//! `breakers`: one circuit breaker per destination, shared by every isolate.
//! Transitions are written with compare-and-set on `version`.

use super::{changes, int, text};
use crate::db::{Query, Rows};
use hookrelay_core::deliver::breaker::{decode_state, BreakerState};
use hookrelay_core::state::BreakerStateName;
use hookrelay_core::support::vec_map::VecMap;
use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement, Result};

/// A destination's state and version (0 when it has no row yet). A state
/// this version cannot read is an error, never a silently closed breaker.
pub async fn load(db: &D1Database, destination: &str) -> Result<(BreakerState, i64)> {
    let stmt = db
        .prepare("SELECT state, version FROM breakers WHERE destination = ?1")
        .bind(&[text(destination)])?;
    let row = stmt
        .query()
        .await?
        .map_first(|r| Ok((r.text("state")?, r.int("version")?)))?;
    match row {
        Some((state, version)) => Ok((decode_state(&state)?, version)),
        None => Ok((BreakerState::default(), 0)),
    }
}

/// The stored breakers of `destinations`: a statement for a read batch,
/// answered by [`parse_many`].
pub fn load_many(db: &D1Database, destinations: &[&str]) -> Result<D1PreparedStatement> {
    let list = serde_json::to_string(destinations)?;
    db.prepare(
        "SELECT destination, state, version FROM breakers WHERE destination IN (SELECT value FROM json_each(?1))",
    )
    .bind(&[text(&list)])
}

/// Each destination [`load_many`] found, with its state and version; a
/// destination without a row is closed at version 0. A state this version
/// cannot read is an error, never a silently closed breaker.
pub fn parse_many(result: &Rows) -> Result<VecMap<String, (BreakerState, i64)>> {
    let rows = result.map(|r| {
        let state = decode_state(&r.text("state")?)?;
        Ok((r.text("destination")?, (state, r.int("version")?)))
    })?;
    Ok(rows.into_iter().collect())
}

/// Writes `next` if the stored version is still `version`; whether it did.
pub async fn compare_and_set(
    db: &D1Database,
    destination: &str,
    version: i64,
    next: BreakerState,
    now_ms: i64,
) -> Result<bool> {
    let state = serde_json::to_string(&next)?;
    let stmt = if version == 0 {
        db.prepare("INSERT INTO breakers (destination, state_name, state, version, updated_at) VALUES (?1, ?2, ?3, 1, ?4) ON CONFLICT(destination) DO NOTHING")
            .bind(&[text(destination), text(next.state_name().as_str()), text(&state), int(now_ms)])?
    } else {
        db.prepare("UPDATE breakers SET state_name = ?2, state = ?3, version = version + 1, updated_at = ?4 WHERE destination = ?1 AND version = ?5")
            .bind(&[text(destination), text(next.state_name().as_str()), text(&state), int(now_ms), int(version)])?
    };
    Ok(changes(&stmt.query().await?) > 0)
}

/// One breaker as the stats endpoint shows it.
#[derive(Debug, Deserialize)]
pub struct BreakerRow {
    /// The destination URL (callers label it before showing it).
    pub destination: String,
    /// Closed, open or half-open.
    pub state_name: BreakerStateName,
    /// When it last changed.
    pub updated_at: i64,
}

/// Every breaker (for the stats batch).
pub fn all(db: &D1Database) -> D1PreparedStatement {
    db.prepare("SELECT destination, state_name, updated_at FROM breakers ORDER BY destination")
}

/// Every breaker that is not CLOSED, with when it last left CLOSED
/// (`left_closed_at`, kept by migration 0010's triggers across
/// OPEN → HALF_OPEN → OPEN) and its state JSON (for the cause).
pub fn not_closed(db: &D1Database) -> Result<D1PreparedStatement> {
    db.prepare(
        "SELECT destination, state, left_closed_at FROM breakers WHERE left_closed_at IS NOT NULL ORDER BY destination LIMIT 500",
    )
    .bind(&[])
}

/// The answer to [`not_closed`]: destination, state, left-closed time. A
/// state this version cannot read is an error.
pub fn read_not_closed(rows: &Rows) -> Result<Vec<(String, BreakerState, i64)>> {
    rows.map(|r| {
        Ok((
            r.text("destination")?,
            decode_state(&r.text("state")?)?,
            r.int("left_closed_at")?,
        ))
    })
}
