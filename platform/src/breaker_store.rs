//! The circuit breakers in D1, shared by every isolate.
//!
//! The transitions are `hookrelay_core::breaker`'s; this module loads a
//! destination's state, applies a transition, and writes it back with
//! compare-and-set on `version`. When another isolate wrote first, it
//! reloads and applies the transition again to the newer state, so two
//! isolates never both take the single half-open probe.

use crate::d1::{int, text};
use crate::log;
use hookrelay_core::breaker::{admit, record, Admission, BreakerConfig, BreakerState};
use hookrelay_core::redact::destination_label;
use serde::Deserialize;
use serde_json::json;
use worker::{D1Database, Result};

const CAS_ATTEMPTS: usize = 5;

#[derive(Deserialize)]
struct Row {
    state: String,
    version: f64,
}

async fn load(db: &D1Database, destination: &str) -> Result<(BreakerState, i64)> {
    let row = db
        .prepare("SELECT state, version FROM breakers WHERE destination = ?1")
        .bind(&[text(destination)])?
        .first::<Row>(None)
        .await?;
    Ok(match row {
        Some(r) => (
            serde_json::from_str(&r.state).unwrap_or_default(),
            r.version as i64,
        ),
        None => (BreakerState::default(), 0),
    })
}

/// Writes `next` if the stored version is still `version`.
async fn compare_and_set(
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
    let result = stmt.run().await?;
    Ok(result.meta()?.and_then(|m| m.changes).unwrap_or(0) > 0)
}

fn log_transition(destination: &str, from: BreakerState, to: BreakerState) {
    if from.name() != to.name() {
        crate::metrics::count(
            hookrelay_core::metrics::Metric::new("breaker_transition", "consumer")
                .detail(to.name()),
            1,
        );
        log::warn(
            "consumer",
            "breaker_transition",
            json!({"destination": destination_label(destination), "from": from.name(), "to": to.name()}),
        );
    }
}

/// Whether a call to `destination` may go out now. A probe is claimed in D1
/// before it is admitted.
pub async fn admit_call(
    db: &D1Database,
    destination: &str,
    now_ms: i64,
    cfg: &BreakerConfig,
) -> Result<Admission> {
    for _ in 0..CAS_ATTEMPTS {
        let (state, version) = load(db, destination).await?;
        match admit(state, now_ms, cfg) {
            Admission::Probe { next } => {
                if compare_and_set(db, destination, version, next, now_ms).await? {
                    log_transition(destination, state, next);
                    return Ok(Admission::Probe { next });
                }
            }
            other => return Ok(other),
        }
    }
    // Lost every race: someone else is probing right now.
    Ok(Admission::Reject {
        retry_at_ms: now_ms + cfg.cooldown_ms,
    })
}

/// Records a finished call's health.
pub async fn record_call(
    db: &D1Database,
    destination: &str,
    healthy: bool,
    now_ms: i64,
    cfg: &BreakerConfig,
) -> Result<()> {
    for _ in 0..CAS_ATTEMPTS {
        let (state, version) = load(db, destination).await?;
        let next = record(state, healthy, now_ms, cfg);
        if next == state {
            return Ok(());
        }
        if compare_and_set(db, destination, version, next, now_ms).await? {
            log_transition(destination, state, next);
            return Ok(());
        }
    }
    log::error(
        "consumer",
        "breaker_record_contended",
        json!({"destination": destination_label(destination)}),
    );
    Ok(())
}
