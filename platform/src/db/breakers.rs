//! `breakers`: one circuit breaker per destination, shared by every isolate.
//! Transitions are written with compare-and-set on `version`.

use super::{changes, int, text};
use crate::db::{Query, Rows};
use hookrelay_core::breaker::BreakerState;
use hookrelay_core::error_code::ErrorCode;
use hookrelay_core::vec_map::VecMap;
use serde::Deserialize;
use serde_json::Value;
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

/// Reads a stored breaker state (the JSON `BreakerState`'s serde writes),
/// as its derived `Deserialize` would. Through `serde_json::Value`, whose
/// deserializer every worker already carries: the derived one is an
/// internally tagged enum, which buffers through serde's `Content` and cost
/// ~9 KB of wasm for this one read.
fn decode_state(text: &str) -> serde_json::Result<BreakerState> {
    use serde::de::Error;
    let v: Value = serde_json::from_str(text)?;
    let field = |name: &'static str| v.get(name).filter(|f| !f.is_null());
    let invalid = |name: &str| serde_json::Error::custom(format!("invalid `{name}`"));
    let required =
        |name: &'static str| field(name).ok_or_else(|| serde_json::Error::missing_field(name));
    let count = |name: &'static str| {
        let n = required(name)?.as_u64().ok_or_else(|| invalid(name))?;
        u32::try_from(n).map_err(|_| invalid(name))
    };
    let millis = |name: &'static str| {
        field(name)
            .map(|f| f.as_i64().ok_or_else(|| invalid(name)))
            .transpose()
    };
    let cause = || {
        field("cause")
            .map(|c| {
                c.as_str()
                    .and_then(ErrorCode::parse)
                    .ok_or_else(|| invalid("cause"))
            })
            .transpose()
    };
    match v.get("state").and_then(Value::as_str) {
        Some("CLOSED") => Ok(BreakerState::Closed {
            failures: count("failures")?,
        }),
        Some("OPEN") => Ok(BreakerState::Open {
            opened_at_ms: millis("opened_at_ms")?
                .ok_or_else(|| serde_json::Error::missing_field("opened_at_ms"))?,
            cause: cause()?,
        }),
        Some("HALF_OPEN") => Ok(BreakerState::HalfOpen {
            successes: count("successes")?,
            probe_started_at_ms: millis("probe_started_at_ms")?,
            cause: cause()?,
        }),
        Some(other) => Err(serde_json::Error::unknown_variant(
            other,
            &["CLOSED", "OPEN", "HALF_OPEN"],
        )),
        None => Err(serde_json::Error::missing_field("state")),
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
    Ok(changes(&stmt.query().await?) > 0)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every state, as written, reads back as itself, exactly as the
    /// derived `Deserialize` reads it.
    #[test]
    fn reads_what_is_written() {
        let states = [
            BreakerState::Closed { failures: 0 },
            BreakerState::Closed { failures: 7 },
            BreakerState::Open {
                opened_at_ms: 1_764_000_000_000,
                cause: None,
            },
            BreakerState::Open {
                opened_at_ms: 5,
                cause: Some(ErrorCode::Upstream5xx),
            },
            BreakerState::HalfOpen {
                successes: 1,
                probe_started_at_ms: None,
                cause: None,
            },
            BreakerState::HalfOpen {
                successes: 2,
                probe_started_at_ms: Some(9),
                cause: Some(ErrorCode::Timeout),
            },
        ];
        for state in states {
            let text = serde_json::to_string(&state).unwrap();
            assert_eq!(decode_state(&text).unwrap(), state, "{text}");
            assert_eq!(serde_json::from_str::<BreakerState>(&text).unwrap(), state);
        }
    }

    /// What the derived `Deserialize` refuses or accepts, this does too.
    #[test]
    fn agrees_with_the_derived_reader() {
        let cases = [
            r#"{"state":"CLOSED"}"#,
            r#"{"state":"CLOSED","failures":-1}"#,
            r#"{"state":"CLOSED","failures":1.5}"#,
            r#"{"state":"CLOSED","failures":4294967296}"#,
            r#"{"state":"CLOSED","failures":"1"}"#,
            r#"{"state":"CLOSED","failures":null}"#,
            r#"{"state":"CLOSED","failures":3,"extra":true}"#,
            r#"{"state":"OPEN"}"#,
            r#"{"state":"OPEN","opened_at_ms":1,"cause":null}"#,
            r#"{"state":"OPEN","opened_at_ms":1,"cause":"NOPE"}"#,
            r#"{"state":"OPEN","opened_at_ms":1,"cause":3}"#,
            r#"{"state":"HALF_OPEN","successes":0}"#,
            r#"{"state":"HALF_OPEN","successes":0,"probe_started_at_ms":null}"#,
            r#"{"state":"HALF_OPEN","successes":0,"probe_started_at_ms":"x"}"#,
            r#"{"state":"open","opened_at_ms":1}"#,
            r#"{"failures":1}"#,
            r#"{"state":1}"#,
            r#"[]"#,
            r#"not json"#,
        ];
        for text in cases {
            let derived = serde_json::from_str::<BreakerState>(text).ok();
            assert_eq!(decode_state(text).ok(), derived, "{text}");
        }
    }
}
