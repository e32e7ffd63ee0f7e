//! Applies `hookrelay_core::deliver::breaker` transitions to the state kept in D1.
//!
//! A transition is loaded, computed in the core, and written back with
//! compare-and-set (`db::breakers`). When another isolate wrote first, it
//! reloads and applies the transition again to the newer state, so two
//! isolates never both take the single half-open probe.

use crate::db::breakers;
use crate::{log, metrics};
use hookrelay_core::deliver::breaker::waves::DestinationWaves;
use hookrelay_core::deliver::breaker::{
    admit, after_lost_claim, force_open, next_probe_at, record, Admission, BreakerConfig,
    BreakerState, LostClaim,
};
use hookrelay_core::metrics::{Component, Metric, MetricName};
use hookrelay_core::state::error_code::ErrorCode;
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
            log::fields! {"destination": destination, "from": from.name(), "to": to.name()},
        );
    }
}

/// Whether a call to `destination` may go out now. A probe is claimed in D1
/// before it is admitted; a claim lost to another isolate reloads and asks
/// again until `after_lost_claim` gives up.
pub async fn admit_call(
    db: &D1Database,
    component: Component,
    destination: &str,
    now_ms: i64,
    cfg: &BreakerConfig,
) -> Result<Admission> {
    let mut lost = 0;
    loop {
        let (state, version) = breakers::load(db, destination).await?;
        let admission = admit(state, now_ms, cfg);
        let Admission::Probe { next } = admission else {
            return Ok(admission);
        };
        if breakers::compare_and_set(db, destination, version, next, now_ms).await? {
            log_transition(component, destination, state, next);
            return Ok(Admission::Probe { next });
        }
        lost += 1;
        if let LostClaim::GiveUp { retry_at_ms, cause } = after_lost_claim(lost, state, now_ms, cfg)
        {
            return Ok(Admission::Reject { retry_at_ms, cause });
        }
    }
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
        log::fields! {"destination": destination},
    );
    Ok(())
}

/// Claims the single half-open probe of a batch's destination: writes
/// `next` over `from` if the stored version is still `version`. Whether it
/// did; the winner's version is then `version + 1`.
pub async fn claim_probe(
    db: &D1Database,
    component: Component,
    destination: &str,
    (from, version): (BreakerState, i64),
    next: BreakerState,
    now_ms: i64,
) -> Result<bool> {
    let won = breakers::compare_and_set(db, destination, version, next, now_ms).await?;
    if won {
        log_transition(component, destination, from, next);
    }
    Ok(won)
}

/// Writes the state a batch folded for `destination`, once. When another
/// isolate wrote first, it reloads and folds the batch's results onto the
/// newer state, as [`record_call`] does for one call.
pub async fn write_folded(
    db: &D1Database,
    component: Component,
    destination: &str,
    waves: &mut DestinationWaves,
    mut stored: (BreakerState, i64),
    cfg: &BreakerConfig,
    now_ms: i64,
) -> Result<()> {
    for _ in 0..CAS_ATTEMPTS {
        let Some(next) = waves.to_write() else {
            return Ok(());
        };
        if breakers::compare_and_set(db, destination, stored.1, next, now_ms).await? {
            log_transition(component, destination, stored.0, next);
            waves.written();
            return Ok(());
        }
        stored = breakers::load(db, destination).await?;
        waves.reloaded(stored.0, None, now_ms, cfg);
    }
    log::error(
        component,
        "breaker_record_contended",
        log::fields! {"destination": destination},
    );
    Ok(())
}

/// Re-opens the breaker at once with `cause` (a drain step met an
/// unhealthy answer), whatever its state; answers when the next probe is
/// due. A write that keeps losing the race is logged, and the answer still
/// stands for this step.
pub async fn force_open_call(
    db: &D1Database,
    component: Component,
    destination: &str,
    cause: ErrorCode,
    retry_after_s: Option<u32>,
    now_ms: i64,
    cfg: &BreakerConfig,
) -> Result<i64> {
    let next = force_open(cause, retry_after_s, now_ms, cfg);
    let probe_at = next_probe_at(next, cfg).unwrap_or(now_ms + cfg.cooldown_ms);
    for _ in 0..CAS_ATTEMPTS {
        let (state, version) = breakers::load(db, destination).await?;
        if breakers::compare_and_set(db, destination, version, next, now_ms).await? {
            log_transition(component, destination, state, next);
            return Ok(probe_at);
        }
    }
    log::error(
        component,
        "breaker_record_contended",
        log::fields! {"destination": destination},
    );
    Ok(probe_at)
}
