//! Phase 3: write each call's result back in one round trip: the
//! delivery's row (its lease released), an `attempts` row with its
//! destination for a failure, the call in its event's story, and the
//! event's one `delivery_status` recomputed from its deliveries; then park
//! the deliveries the deliver phase decided to park.

use super::call::{Attempt, Call};
use super::item::{DeliveryItem, Processed};
use crate::db::{attempts, deliveries, error_message, event_steps};
use crate::parking::park;
use crate::{log, now_ms};
use hookrelay_core::metrics::Component;
use hookrelay_core::parking::Caller;
use hookrelay_core::retry::disposition::Outcome;
use hookrelay_core::state::error_code::{ErrorCode, Failure};
use hookrelay_core::state::DeliveryState;
use hookrelay_core::state::{delivery_step, DownstreamResult};
use worker::{D1Database, D1PreparedStatement, Queue};

/// One call that went out (or was refused), and how it went.
type Called = (usize, Result<(), Failure>);

/// Which message carried each item, for its attempt row: the queue message
/// id and the platform's attempt number.
pub type Carrier<'a> = (&'a str, u32);

/// Records every call in one round trip and folds it into `out` (one per
/// item). If the write fails the leases expire on their own, and the
/// outcomes still decide the retry.
#[allow(clippy::too_many_arguments)]
pub async fn record(
    db: &D1Database,
    items: &[DeliveryItem],
    carriers: &[Carrier<'_>],
    calls: Vec<Call>,
    out: &mut [Processed],
    (component, caller): (Component, Caller),
    control: Option<&Queue>,
) {
    let (called, parked): (Vec<Call>, Vec<Call>) = calls
        .into_iter()
        .partition(|(_, a)| matches!(a, Attempt::Called(_)));
    let called: Vec<Called> = called
        .into_iter()
        .filter_map(|(i, a)| match a {
            Attempt::Called(r) => Some((i, r)),
            Attempt::Parked { .. } => None,
        })
        .collect();
    if let Err(e) = write(db, items, carriers, &called, component, caller).await {
        log::error(
            component,
            "delivery_record_failed",
            log::fields! {"count": called.len(), "err": error_message(&e)},
        );
    }
    for (i, result) in called {
        match result {
            Ok(()) => out[i].downstream = DownstreamResult::Delivered,
            Err(f) => {
                out[i].downstream = DownstreamResult::Failed;
                out[i].outcome = Outcome::Failed(f);
            }
        }
    }
    if !parked.is_empty() {
        park::park(db, items, parked, out, component, control).await;
    }
}

/// The results, their attempts, their steps and their events' summaries,
/// in one batch: the story never says a call happened that the rows do not
/// count, or the reverse.
async fn write(
    db: &D1Database,
    items: &[DeliveryItem],
    carriers: &[Carrier<'_>],
    calls: &[Called],
    component: Component,
    caller: Caller,
) -> worker::Result<()> {
    if calls.is_empty() {
        return Ok(());
    }
    let now = now_ms();
    let mut stmts: Vec<D1PreparedStatement> = Vec::with_capacity(calls.len() * 3 + 1);
    for (i, result) in calls {
        let item = &items[*i];
        let key = (item.event.event_id.as_str(), item.destination.as_str());
        let failure = result.as_ref().err();
        let after = failure.map_or(DeliveryState::Delivered, |f| {
            DeliveryState::after_failure(caller, f)
        });
        stmts.push(deliveries::outcome_statement(db, key, failure, after, now)?);
        // A replay's failure is the DLQ worker's to record (replay_attempts).
        if let (Some(f), false) = (failure, caller == Caller::Replay) {
            let (queue_message_id, attempt) = carriers[*i];
            stmts.push(attempts::insert_statement(
                db,
                &attempts::FailedAttempt {
                    event_id: Some(key.0),
                    queue_message_id,
                    attempt,
                    failure: f,
                    destination: Some(key.1),
                },
                now,
            )?);
        }
    }
    // One summary per event, after all of its deliveries' writes.
    summaries(db, items, calls, now, &mut stmts)?;
    let details: Vec<_> = calls
        .iter()
        .map(|(i, result)| {
            let (step, code, detail) = delivery_step(result);
            (step, code, format!("{}: {detail}", items[*i].destination))
        })
        .collect();
    let steps: Vec<event_steps::StepRecord> = calls
        .iter()
        .zip(&details)
        .map(|((i, _), (step, code, detail))| event_steps::StepRecord {
            event_id: &items[*i].event.event_id,
            step: *step,
            component,
            code: *code,
            detail,
            at_ms: now,
        })
        .collect();
    stmts.extend(event_steps::insert_many(db, &steps)?);
    crate::db::batch(db, stmts).await?;
    Ok(())
}

/// Each event's summary (and counters) over the calls made to it.
fn summaries(
    db: &D1Database,
    items: &[DeliveryItem],
    calls: &[Called],
    now: i64,
    stmts: &mut Vec<D1PreparedStatement>,
) -> worker::Result<()> {
    let mut seen: Vec<&str> = Vec::new();
    for (i, _) in calls {
        let event_id = items[*i].event.event_id.as_str();
        if seen.contains(&event_id) {
            continue;
        }
        seen.push(event_id);
        let mine = calls
            .iter()
            .filter(|(j, _)| items[*j].event.event_id == event_id);
        let (mut n, mut delivered, mut last) = (0i64, None, None::<ErrorCode>);
        for (_, r) in mine {
            n += 1;
            match r {
                Ok(()) => delivered = Some(now),
                Err(f) => last = Some(f.code),
            }
        }
        stmts.push(deliveries::summary_statement(
            db, event_id, n, delivered, last,
        )?);
    }
    Ok(())
}
