//! Phase 4: write each call's result back, release the leases and add each
//! call to its event's story (`event_steps`), all in one batch; then park
//! the events the deliver phase decided to park.

use super::call::{Attempt, Call};
use super::{Item, Processed};
use crate::db::{error_message, event_steps, events};
use crate::parking::park;
use crate::{log, now_ms};
use hookrelay_core::disposition::Outcome;
use hookrelay_core::error_code::Failure;
use hookrelay_core::metrics::Component;
use hookrelay_core::state::{delivery_step, DownstreamResult};
use worker::{D1Database, D1PreparedStatement, Queue};

/// One call that went out (or was refused), and how it went.
type Called = (usize, Result<(), Failure>);

/// Records every call in one round trip and folds it into `out`. If the
/// write fails the leases expire on their own, and the outcomes still
/// decide the retry.
pub async fn record(
    db: &D1Database,
    items: &[Item<'_>],
    calls: Vec<Call>,
    out: &mut [Processed],
    component: Component,
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
    if let Err(e) = write(db, items, &called, component).await {
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

/// The delivery results and their steps, in one batch: the story never
/// says a call happened that the event row does not count, or the reverse.
async fn write(
    db: &D1Database,
    items: &[Item<'_>],
    calls: &[Called],
    component: Component,
) -> worker::Result<()> {
    if calls.is_empty() {
        return Ok(());
    }
    let now = now_ms();
    let records: Vec<events::DeliveryRecord> = calls
        .iter()
        .map(|(i, result)| events::DeliveryRecord {
            event_id: &items[*i].event.event_id,
            failure: result.as_ref().err(),
        })
        .collect();
    let mut stmts: Vec<D1PreparedStatement> = events::delivery_statements(db, &records, now)?;
    let details: Vec<_> = calls
        .iter()
        .map(|(_, result)| delivery_step(result))
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
