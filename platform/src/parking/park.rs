//! Parking the events the deliver phase decided to park: no network call
//! was made; each waits in D1 (`delivery_status = parked`) and its message
//! is acked (`Outcome::Parked`), so it spends no retry budget and makes no
//! DLQ entry. Its destination's drain is made sure of.

use super::deliver::{Attempt, Call};
use super::{Item, Processed};
use crate::db::{drains, error_message, event_steps, events};
use crate::{log, metrics, now_ms, queue_send};
use hookrelay_core::d1_error::classify_d1_error;
use hookrelay_core::disposition::Outcome;
use hookrelay_core::parking::drain_plan::STALE_AFTER_MS;
use hookrelay_core::error_code::ErrorCode;
use hookrelay_core::metrics::{Component, Metric, MetricName};
use hookrelay_core::parking::{delay_s_until, DrainMessage};
use hookrelay_core::redact::destination_label;
use hookrelay_core::state::{DownstreamResult, EventStep};
use worker::{D1Database, Queue};

/// Parks every `parked` call in one round trip, then makes sure each
/// destination has a drain. If the write fails the events keep their
/// lease (it expires) and their messages are retried.
pub async fn park(
    db: &D1Database,
    items: &[Item<'_>],
    parked: Vec<Call>,
    out: &mut [Processed],
    component: Component,
    control: Option<&Queue>,
) {
    let now = now_ms();
    // Per destination: the earliest probe time any of its parks saw, and a
    // cause. A batch parks for a handful of destinations: a list will do.
    let mut probes: Vec<(&str, Option<i64>, Option<ErrorCode>)> = Vec::new();
    let mut statements = Vec::new();
    for (i, attempt) in &parked {
        let Attempt::Parked {
            destination,
            cause,
            probe_at_ms,
        } = attempt
        else {
            continue;
        };
        let event_id = &items[*i].event.event_id;
        let detail = format!(
            "held while the breaker of {} is open",
            destination_label(destination)
        );
        let step = event_steps::StepRecord {
            event_id,
            step: EventStep::Parked,
            component,
            code: *cause,
            detail: &detail,
            at_ms: now,
        };
        match (
            events::park_statement(db, event_id, destination, *cause, now),
            event_steps::insert(db, &step),
        ) {
            (Ok(s), Ok(t)) => statements.extend([s, t]),
            (Err(e), _) | (_, Err(e)) => return fail_all(&parked, out, &error_message(&e)),
        }
        let at = match probes.iter().position(|(d, ..)| *d == destination.as_str()) {
            Some(at) => at,
            None => {
                probes.push((destination, None, None));
                probes.len() - 1
            }
        };
        let (_, probe, known) = &mut probes[at];
        *probe = match (*probe, *probe_at_ms) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        *known = known.or(*cause);
    }
    if let Err(e) = crate::db::batch(db, statements).await {
        return fail_all(&parked, out, &error_message(&e));
    }
    mark_parked(items, &parked, out, component);
    for (destination, probe_at, cause) in probes {
        let probe_at = probe_at.unwrap_or(now);
        ensure_drain(db, control, destination, cause, probe_at, component).await;
    }
}

/// Folds the parks into the outcomes (acked, no retry budget), and counts
/// and logs each one.
fn mark_parked(items: &[Item<'_>], parked: &[Call], out: &mut [Processed], component: Component) {
    for (i, attempt) in parked {
        let Attempt::Parked {
            destination, cause, ..
        } = attempt
        else {
            continue;
        };
        let event = items[*i].event;
        out[*i].downstream = DownstreamResult::Parked;
        out[*i].outcome = Outcome::Parked;
        metrics::count(
            Metric::new(MetricName::Parked, component).source(&event.source),
            1,
        );
        log::info(
            component,
            "parked",
            log::fields! {"id": event.event_id, "source": event.source, "destination": destination_label(destination), "cause": cause},
        );
    }
}

fn fail_all(parked: &[Call], out: &mut [Processed], err: &str) {
    let failure = classify_d1_error(err);
    for (i, _) in parked {
        out[*i].downstream = DownstreamResult::Failed;
        out[*i].outcome = Outcome::Failed(failure.clone());
    }
}

/// Makes sure `destination` has a drain whose first step runs when the
/// breaker admits its probe. Only the call that created the row (or found
/// its chain lost) sends a message. A failed send is logged: the row
/// stays, and the periodic resume check sends it later.
pub async fn ensure_drain(
    db: &D1Database,
    control: Option<&Queue>,
    destination: &str,
    cause: Option<ErrorCode>,
    probe_at_ms: i64,
    component: Component,
) {
    let now = now_ms();
    let label = destination_label(destination);
    let generation = match drains::ensure(
        db,
        destination,
        cause,
        probe_at_ms.max(now),
        now - STALE_AFTER_MS,
        now,
    )
    .await
    {
        Ok(Some(g)) => g,
        Ok(None) => return,
        Err(e) => {
            log::error(
                component,
                "drain_ensure_failed",
                log::fields! {"destination": label, "err": error_message(&e)},
            );
            return;
        }
    };
    let delay_s = delay_s_until(probe_at_ms, now);
    let sent = match control {
        Some(q) => {
            queue_send::send_json_after(
                q,
                &DrainMessage::new(destination, generation).to_json(),
                delay_s,
            )
            .await
        }
        None => Err(worker::Error::RustError(
            "the CONTROL queue binding is missing".into(),
        )),
    };
    match sent {
        Ok(()) => log::info(
            component,
            "drain_scheduled",
            log::fields! {"destination": label, "generation": generation, "delay_s": delay_s},
        ),
        Err(e) => log::error(
            component,
            "drain_send_failed",
            log::fields! {"destination": label, "generation": generation, "err": error_message(&e)},
        ),
    }
}
