//! `PARK_MAX_AGE`: parked deliveries that waited too long go to the DLQ with
//! their root cause (`hookrelay_core::parking::expiry`), a bounded number
//! per step.

use super::{handoff_json, send_handoffs, DrainCtx, COMPONENT};
use crate::db::{deliveries, error_message};
use crate::{log, metrics, now_ms};
use hookrelay_core::metrics::{Metric, MetricName};
use hookrelay_core::parking::expiry::{expired, parked_before, EXPIRE_PER_STEP};

/// Dead-letters the over-age events of `destination`; how many. The dead
/// letters are sent before the events are marked `failed`, so a crash in
/// between resends one (the DLQ merges identical pending entries) rather
/// than losing it.
pub async fn expire(ctx: &DrainCtx<'_>, destination: &str) -> u32 {
    let now = now_ms();
    let max_age = ctx.cfg.parking.max_age_ms;
    let cutoff = parked_before(now, max_age);
    let rows = match deliveries::over_age(ctx.db, destination, cutoff, EXPIRE_PER_STEP).await {
        Ok(r) => r,
        Err(e) => {
            log::error(
                COMPONENT,
                "expire_read_failed",
                log::fields! {"err": error_message(&e)},
            );
            return 0;
        }
    };
    let mut ids = Vec::new();
    let mut handoffs = Vec::new();
    for d in &rows {
        let row = &d.event;
        let Some(failure) = expired(row.parked_at, now, max_age, row.last_error(), None) else {
            continue;
        };
        metrics::count(
            Metric::new(MetricName::DeadLetterHandoff, COMPONENT)
                .source(&row.source)
                .code(failure.code),
            1,
        );
        log::warn(
            COMPONENT,
            "parked_too_long",
            log::fields! {"id": row.event_id, "code": failure.code, "parked_at": row.parked_at},
        );
        let attempts = row.delivery_attempts.max(0) as u32;
        handoffs.push(handoff_json(
            row,
            (destination, None),
            failure,
            attempts,
            now,
        ));
        ids.push((row.event_id.as_str(), destination));
    }
    if let Err(e) = send_handoffs(ctx.env, &handoffs).await {
        log::error(
            COMPONENT,
            "dlq_handoff_failed",
            log::fields! {"count": ids.len(), "err": error_message(&e)},
        );
        return 0;
    }
    if let Err(e) = deliveries::mark_handed_off(ctx.db, &ids, now).await {
        log::error(
            COMPONENT,
            "expire_mark_failed",
            log::fields! {"count": ids.len(), "err": error_message(&e)},
        );
    }
    ids.len() as u32
}
