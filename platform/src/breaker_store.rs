//! Applies `hookrelay_core::breaker` transitions to the state kept in D1.
//!
//! A transition is loaded, computed in the core, and written back with
//! compare-and-set (`db::breakers`). When another isolate wrote first, it
//! reloads and applies the transition again to the newer state, so two
//! isolates never both take the single half-open probe.

use crate::db::breakers;
use crate::{log, metrics};
use hookrelay_core::breaker::{admit, record, Admission, BreakerConfig, BreakerState};
use hookrelay_core::error_code::ErrorCode;
use hookrelay_core::metrics::{Component, Metric, MetricName};
use hookrelay_core::redact::destination_label;
use serde_json::json;
use worker::{D1Database, Result};

const CAS_ATTEMPTS: usize = 5;

fn log_transition(component: Component, destination: &str, from: BreakerState, to: BreakerState) {
    if from.name() != to.name() {
        metrics::count(
            Metric::new(MetricName::BreakerTransition, component).detail(to.name()),
            1,
        );
        log::warn(
            component,
            "breaker_transition",
            json!({"destination": destination_label(destination), "from": from.name(), "to": to.name()}),
        );
    }
}

/// Whether a call to `destination` may go out now. A probe is claimed in D1
/// before it is admitted.
pub async fn admit_call(
    db: &D1Database,
    component: Component,
    destination: &str,
    now_ms: i64,
    cfg: &BreakerConfig,
) -> Result<Admission> {
    for _ in 0..CAS_ATTEMPTS {
        let (state, version) = breakers::load(db, destination).await?;
        match admit(state, now_ms, cfg) {
            Admission::Probe { next } => {
                if breakers::compare_and_set(db, destination, version, next, now_ms).await? {
                    log_transition(component, destination, state, next);
                    return Ok(Admission::Probe { next });
                }
            }
            other => return Ok(other),
        }
    }
    // Lost every race: someone else is probing right now.
    Ok(Admission::Reject {
        retry_at_ms: now_ms + cfg.cooldown_ms,
        cause: None,
    })
}

/// Records a finished call's health.
pub async fn record_call(
    db: &D1Database,
    component: Component,
    destination: &str,
    unhealthy: Option<ErrorCode>,
    now_ms: i64,
    cfg: &BreakerConfig,
) -> Result<()> {
    for _ in 0..CAS_ATTEMPTS {
        let (state, version) = breakers::load(db, destination).await?;
        let next = record(state, unhealthy, now_ms, cfg);
        if next == state {
            return Ok(());
        }
        if breakers::compare_and_set(db, destination, version, next, now_ms).await? {
            log_transition(component, destination, state, next);
            return Ok(());
        }
    }
    log::error(
        component,
        "breaker_record_contended",
        json!({"destination": destination_label(destination)}),
    );
    Ok(())
}
