//! `breakers`: one circuit breaker per destination, shared by every isolate.
//! Transitions are written with compare-and-set on `version`.

use super::{changes, int, text};
use crate::outlined::outlined;
use hookrelay_core::breaker::BreakerState;
use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement, Result};

#[derive(Deserialize)]
struct Row {
    state: String,
    version: f64,
}

/// A destination's state and version (0 when it has no row yet). A state
/// this version cannot read is an error, never a silently closed breaker.
pub async fn load(db: &D1Database, destination: &str) -> Result<(BreakerState, i64)> {
    let stmt = db
        .prepare("SELECT state, version FROM breakers WHERE destination = ?1")
        .bind(&[text(destination)])?;
    // Every breaker check reads this row: one copy of the read, not one
    // inside each caller (see `outlined`).
    let row = outlined(stmt.first::<Row>(None)).await?;
    match row {
        Some(r) => Ok((serde_json::from_str(&r.state)?, r.version as i64)),
        None => Ok((BreakerState::default(), 0)),
    }
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
            .bind(&[text(destination), text(next.name()), text(&state), int(now_ms)])?
    } else {
        db.prepare("UPDATE breakers SET state_name = ?2, state = ?3, version = version + 1, updated_at = ?4 WHERE destination = ?1 AND version = ?5")
            .bind(&[text(destination), text(next.name()), text(&state), int(now_ms), int(version)])?
    };
    Ok(changes(&stmt.run().await?) > 0)
}

/// One breaker as the stats endpoint shows it.
#[derive(Debug, Deserialize)]
pub struct BreakerRow {
    /// The destination URL (callers label it before showing it).
    pub destination: String,
    /// `CLOSED`, `OPEN` or `HALF_OPEN`.
    pub state_name: String,
    /// When it last changed.
    pub updated_at: i64,
}

/// Every breaker (for the stats batch).
pub fn all(db: &D1Database) -> D1PreparedStatement {
    db.prepare("SELECT destination, state_name, updated_at FROM breakers ORDER BY destination")
}
