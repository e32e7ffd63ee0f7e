//! Phase 3, the one recorder of a delivery's calls: what the core decided
//! of each call by its row's count (`hookrelay_core::retry::delivery_attempts`),
//! written back in one round trip under the holder's lease: the row (its
//! attempt counted, its lease released, its next message's due time), an
//! `attempts` row with its destination for a failure, the call in its
//! event's story, and the event's one `delivery_status` recomputed; then the
//! parks the deliver phase decided.
//!
//! A write that fails is tried once more in place. If it still fails, each
//! 2xx travels on as a `deliveries` message that records it and calls
//! nothing (a `DeliveryMessage` carrying `delivered_at_ms`); only if that
//! send fails too is the message retried, and the lease, run out, is
//! settled by the periodic check (`super::overdue`), counted. A failure
//! that could not be written is the periodic check's the same way.

use super::call::{Attempt, Call};
use super::item::{DeliveryItem, Processed};
use crate::db::{attempts, deliveries, error_message, event_steps};
use crate::parking::park;
use crate::{log, now_ms, queue_send, test_faults};
use hookrelay_core::deliver::breaker::BreakerOpenAction;
use hookrelay_core::deliver::deliveries::message::DeliveryMessage;
use hookrelay_core::metrics::Component;
use hookrelay_core::parking::Caller;
use hookrelay_core::retry::delivery_attempts::{after_call, AfterCall};
use hookrelay_core::retry::disposition::Outcome;
use hookrelay_core::retry::policy::RetrySchedule;
use hookrelay_core::state::error_code::{ErrorCode, Failure};
use hookrelay_core::state::DeliveryState;
use hookrelay_core::state::{delivery_step, DownstreamResult};
use worker::{D1Database, D1PreparedStatement, Env, Queue};

/// One call that went out (or was refused), how it went, and what the
/// core decided of it (none for a replay's, which the DLQ worker counts).
type Called = (usize, Result<(), Failure>, Option<AfterCall>);

/// Which message carried each item, for its attempt row: the queue message
/// id and the platform's attempt number.
pub type Carrier<'a> = (&'a str, u32);

/// The holder of a batch's leases, and what its records need.
pub struct Holder<'a> {
    /// The bindings (the `deliveries` queue a carried outcome goes on).
    pub env: &'a Env,
    /// The lease it took.
    pub lease: deliveries::Lease,
    /// `RETRY_DELAYS_S`.
    pub retry: &'a RetrySchedule,
    /// `BREAKER_OPEN_ACTION`.
    pub open_action: BreakerOpenAction,
    /// Who records.
    pub component: Component,
    /// For whom.
    pub caller: Caller,
}

/// Records every call and folds it into `out` (one per item).
pub async fn record(
    db: &D1Database,
    holder: &Holder<'_>,
    items: &[DeliveryItem],
    carriers: &[Carrier<'_>],
    calls: Vec<Call>,
    out: &mut [Processed],
    control: Option<&Queue>,
) {
    // Handed on at the budget's end: given back and sent already.
    let calls: Vec<Call> = calls
        .into_iter()
        .filter(|(_, a)| !matches!(a, Attempt::SentOn))
        .collect();
    let (handed_on, calls): (Vec<Call>, Vec<Call>) = calls
        .into_iter()
        .partition(|(_, a)| matches!(a, Attempt::HandedOn));
    let (called, parked): (Vec<Call>, Vec<Call>) = calls
        .into_iter()
        .partition(|(_, a)| matches!(a, Attempt::Called(_)));
    if !handed_on.is_empty() {
        release(db, holder, items, &handed_on, out).await;
    }
    let called = decided(holder, items, called);
    let now = now_ms();
    let mut written = write(db, holder, items, carriers, &called, now).await;
    if let Err(e) = &written {
        log::warn(
            holder.component,
            "delivery_record_retried",
            log::fields! {"count": called.len(), "err": error_message(e)},
        );
        written = write(db, holder, items, carriers, &called, now).await;
    }
    let unrecorded = match written {
        Ok(()) => false,
        Err(e) => {
            log::error(
                holder.component,
                "delivery_record_failed",
                log::fields! {"count": called.len(), "err": error_message(&e)},
            );
            true
        }
    };
    let carried = if unrecorded {
        carry(holder, items, &called, now).await
    } else {
        false
    };
    for (i, _, _) in &called {
        out[*i].attempt = Some(items[*i].attempts_before + 1);
    }
    fold(called, unrecorded, carried, out);
    if !parked.is_empty() {
        let at = (db, holder.lease.claimed_at);
        park::park(at, items, parked, out, holder.component, control).await;
    }
}

/// Each call with what the core decides of it by its row's count.
fn decided(holder: &Holder<'_>, items: &[DeliveryItem], called: Vec<Call>) -> Vec<Called> {
    called
        .into_iter()
        .filter_map(|(i, a)| match a {
            Attempt::Called(r) => {
                let after = (holder.caller != Caller::Replay).then(|| {
                    after_call(
                        r.as_ref().map(|_| ()),
                        items[i].attempts_before,
                        holder.retry,
                        holder.open_action,
                    )
                });
                Some((i, r, after))
            }
            Attempt::Parked { .. } | Attempt::HandedOn | Attempt::SentOn => None,
        })
        .collect()
}

/// Gives back the leases of the calls handed on (one round trip); each
/// goes to the `deliveries` queue at once. If the write fails the leases
/// run out and the periodic check settles them.
async fn release(
    db: &D1Database,
    holder: &Holder<'_>,
    items: &[DeliveryItem],
    handed_on: &[Call],
    out: &mut [Processed],
) {
    let now = now_ms();
    let stmts: worker::Result<Vec<D1PreparedStatement>> = handed_on
        .iter()
        .map(|(i, _)| {
            let key = (
                items[*i].event.event_id.as_str(),
                items[*i].destination.as_str(),
            );
            deliveries::release_statement(db, key, holder.lease.claimed_at, now)
        })
        .collect();
    let written = match stmts {
        Ok(stmts) => crate::db::batch(db, stmts).await.map(|_| ()),
        Err(e) => Err(e),
    };
    if let Err(e) = written {
        log::error(
            holder.component,
            "lease_release_failed",
            log::fields! {"count": handed_on.len(), "err": error_message(&e)},
        );
        return;
    }
    for (i, _) in handed_on {
        out[*i].handed_on = true;
    }
}

/// Folds the calls into `out`: as recorded, as carried, or (neither) as a
/// failure whose message is retried.
fn fold(called: Vec<Called>, unrecorded: bool, carried: bool, out: &mut [Processed]) {
    for (i, result, after) in called {
        match (result, unrecorded) {
            (Ok(()), false) => {
                out[i].downstream = DownstreamResult::Delivered;
                out[i].after = after;
            }
            (Ok(()), true) if carried => out[i].downstream = DownstreamResult::Delivered,
            (Err(f), false) => {
                out[i].downstream = DownstreamResult::Failed;
                out[i].outcome = Outcome::Failed(f);
                out[i].after = after;
            }
            // Nothing recorded and nothing carried: the message is retried
            // and finds the lease, which the periodic check settles.
            (_, true) => {
                out[i].downstream = DownstreamResult::Failed;
                out[i].outcome = Outcome::Failed(Failure::new(
                    ErrorCode::D1Unavailable,
                    "the call's outcome could not be recorded in D1; its lease runs out and the periodic check settles it",
                ));
            }
        }
    }
}

/// The state a failure leaves, and when its next message is due.
fn after_failure(
    holder: &Holder<'_>,
    f: &Failure,
    after: Option<&AfterCall>,
    now: i64,
) -> (DeliveryState, Option<i64>) {
    let state = DeliveryState::after_failure(holder.caller, f);
    match after {
        Some(AfterCall::Retry { .. }) => (state, after.and_then(|a| a.due_at(now))),
        // Handed to the DLQ next (`deliveries::handed_off_statement`);
        // outstanding meanwhile, so nothing re-sends it.
        Some(AfterCall::HandOff { .. }) => (state, Some(now)),
        _ => (state, None),
    }
}

/// The results, their attempts, their steps and their events' summaries,
/// in one batch: the story never says a call happened that the rows do not
/// count, or the reverse.
async fn write(
    db: &D1Database,
    holder: &Holder<'_>,
    items: &[DeliveryItem],
    carriers: &[Carrier<'_>],
    calls: &[Called],
    now: i64,
) -> worker::Result<()> {
    if calls.is_empty() {
        return Ok(());
    }
    if calls.iter().any(|(_, r, _)| r.is_ok()) && test_faults::armed(holder.env, "record_after_2xx")
    {
        return Err(worker::Error::RustError(
            "HOOKRELAY_TEST_FAULTS=record_after_2xx: the record of a 2xx fails".into(),
        ));
    }
    let mut stmts = call_statements(db, holder, items, carriers, calls, now)?;
    // One summary per event, after all of its deliveries' writes.
    summaries(db, items, calls, now, &mut stmts)?;
    stmts.extend(step_statements(db, holder, items, calls, now)?);
    crate::db::batch(db, stmts).await?;
    Ok(())
}

/// Each call's row and, for a failure, its `attempts` row.
fn call_statements(
    db: &D1Database,
    holder: &Holder<'_>,
    items: &[DeliveryItem],
    carriers: &[Carrier<'_>],
    calls: &[Called],
    now: i64,
) -> worker::Result<Vec<D1PreparedStatement>> {
    let mut stmts: Vec<D1PreparedStatement> = Vec::with_capacity(calls.len() * 3 + 1);
    for (i, result, after) in calls {
        let item = &items[*i];
        let key = (item.event.event_id.as_str(), item.destination.as_str());
        let record = match result {
            Ok(()) => deliveries::Record::Delivered,
            Err(failure) => {
                let (state, due_at) = after_failure(holder, failure, after.as_ref(), now);
                deliveries::Record::Failed {
                    failure,
                    state,
                    due_at,
                }
            }
        };
        let lease = Some(holder.lease.claimed_at);
        stmts.push(deliveries::outcome_statement(db, key, lease, record, now)?);
        // A replay's failure is the DLQ worker's to record (replay_attempts).
        if let (Err(f), false) = (result, holder.caller == Caller::Replay) {
            let (queue_message_id, _) = carriers[*i];
            stmts.push(attempts::insert_statement(
                db,
                &attempts::FailedAttempt {
                    event_id: Some(key.0),
                    queue_message_id,
                    attempt: item.attempts_before + 1,
                    failure: f,
                    destination: Some(key.1),
                },
                now,
            )?);
        }
    }
    Ok(stmts)
}

/// Each call's step in its event's story.
fn step_statements(
    db: &D1Database,
    holder: &Holder<'_>,
    items: &[DeliveryItem],
    calls: &[Called],
    now: i64,
) -> worker::Result<Vec<D1PreparedStatement>> {
    let details: Vec<_> = calls
        .iter()
        .map(|(i, result, _)| {
            let (step, code, detail) = delivery_step(result);
            (step, code, format!("{}: {detail}", items[*i].destination))
        })
        .collect();
    let steps: Vec<event_steps::StepRecord> = calls
        .iter()
        .zip(&details)
        .map(
            |((i, _, _), (step, code, detail))| event_steps::StepRecord {
                event_id: &items[*i].event.event_id,
                step: *step,
                component: holder.component,
                code: *code,
                detail,
                at_ms: now,
            },
        )
        .collect();
    Ok(event_steps::insert_many(db, &steps)?.into_iter().collect())
}

/// Sends each unrecorded 2xx on as a `deliveries` message that records it;
/// whether they all went.
async fn carry(holder: &Holder<'_>, items: &[DeliveryItem], calls: &[Called], now: i64) -> bool {
    let messages: Vec<DeliveryMessage> = calls
        .iter()
        .filter(|(_, r, _)| r.is_ok())
        .map(|(i, _, _)| {
            let e = &items[*i].event;
            DeliveryMessage::new(
                &e.event_id,
                &e.idempotency_key,
                &e.source,
                &items[*i].destination,
                e.received_at_ms,
            )
            .carrying_success(now)
        })
        .collect();
    carry_messages(holder.env, holder.component, &messages).await
}

/// Sends `messages` (each carrying an unrecorded 2xx) on `deliveries`;
/// whether they went.
async fn carry_messages(env: &Env, component: Component, messages: &[DeliveryMessage]) -> bool {
    let jsons: Vec<String> = messages
        .iter()
        .filter_map(|m| serde_json::to_string(m).ok())
        .collect();
    if jsons.is_empty() {
        return false;
    }
    let sent = match env.queue("DELIVERIES") {
        Ok(q) => queue_send::send_json_batch(&q, &jsons).await,
        Err(e) => Err(e),
    };
    match sent {
        Ok(()) => {
            log::warn(
                component,
                "delivery_record_carried",
                log::fields! {"count": jsons.len()},
            );
            true
        }
        Err(e) => {
            log::error(
                component,
                "delivery_record_uncarried",
                log::fields! {"count": jsons.len(), "err": error_message(&e)},
            );
            false
        }
    }
}

/// Records a 2xx carried by a message (`DeliveryMessage::delivered_at_ms`):
/// the row `delivered` (whatever lease it holds), the attempt counted, the
/// story told, the summary recomputed; no call.
pub async fn record_carried(
    db: &D1Database,
    env: &Env,
    (event_id, destination): (&str, &str),
    delivered_at_ms: i64,
    component: Component,
) -> worker::Result<()> {
    if test_faults::armed(env, "record_carried") {
        return Err(worker::Error::RustError(
            "HOOKRELAY_TEST_FAULTS=record_carried: the carried record fails".into(),
        ));
    }
    let key = (event_id, destination);
    let detail = format!(
        "{destination}: delivered (its record was carried by a message after D1 refused the write)"
    );
    let stmts = vec![
        deliveries::outcome_statement(
            db,
            key,
            None,
            deliveries::Record::Delivered,
            delivered_at_ms,
        )?,
        deliveries::summary_statement(db, event_id, 1, Some(delivered_at_ms), None)?,
        event_steps::insert(
            db,
            &event_steps::StepRecord {
                event_id,
                step: hookrelay_core::state::EventStep::Delivered,
                component,
                code: None,
                detail: &detail,
                at_ms: delivered_at_ms,
            },
        )?,
    ];
    crate::db::batch(db, stmts).await?;
    Ok(())
}

/// Records a drain step's call of one parked delivery (leased at
/// `claimed_at`) with the recorder's statements, retry and carry: a 2xx
/// `delivered`, a refusal handed to the DLQ (its hand-off already sent).
pub async fn record_drained(
    (db, env): (&D1Database, &Env),
    event: &crate::db::events::ParkedRow,
    (event_id, destination, claimed_at): (&str, &str, i64),
    failure: Option<&Failure>,
    component: Component,
) {
    let now = now_ms();
    let statements = || {
        drained_statements(
            db,
            (event_id, destination, claimed_at),
            failure,
            component,
            now,
        )
    };
    let fault = failure.is_none() && test_faults::armed(env, "record_after_2xx");
    let mut written = Err(worker::Error::RustError(
        "HOOKRELAY_TEST_FAULTS=record_after_2xx".into(),
    ));
    for _ in 0..2 {
        if !fault {
            written = match statements() {
                Ok(stmts) => crate::db::batch(db, stmts).await.map(|_| ()),
                Err(e) => Err(e),
            };
        }
        if written.is_ok() {
            return;
        }
    }
    if let Err(e) = written {
        log::error(
            component,
            "delivery_record_failed",
            log::fields! {"count": 1, "err": error_message(&e)},
        );
    }
    if failure.is_none() {
        let m = DeliveryMessage::new(
            event_id,
            &event.idempotency_key,
            &event.source,
            destination,
            event.received_at,
        );
        carry_messages(env, component, &[m.carrying_success(now)]).await;
    }
}

/// A drained call's statements: its row, its hand-off mark for a failure,
/// its step and its event's summary.
fn drained_statements(
    db: &D1Database,
    (event_id, destination, claimed_at): (&str, &str, i64),
    failure: Option<&Failure>,
    component: Component,
    now: i64,
) -> worker::Result<Vec<D1PreparedStatement>> {
    let key = (event_id, destination);
    let record = match failure {
        None => deliveries::Record::Delivered,
        Some(failure) => deliveries::Record::Failed {
            failure,
            state: DeliveryState::Pending,
            due_at: Some(now),
        },
    };
    let mut stmts = vec![deliveries::outcome_statement(
        db,
        key,
        Some(claimed_at),
        record,
        now,
    )?];
    if failure.is_some() {
        stmts.push(deliveries::handed_off_statement(db, &[key], now)?);
    }
    let (step, code, detail) = match failure {
        None => (
            hookrelay_core::state::EventStep::Drained,
            None,
            format!("{destination}: delivered by the drain after its destination recovered"),
        ),
        Some(f) => {
            let (step, code, detail) = delivery_step(&Err(f.clone()));
            (step, code, format!("{destination}: {detail}"))
        }
    };
    let step = event_steps::StepRecord {
        event_id,
        step,
        component,
        code,
        detail: &detail,
        at_ms: now,
    };
    stmts.push(event_steps::insert(db, &step)?);
    let delivered = failure.is_none().then_some(now);
    stmts.push(deliveries::summary_statement(
        db,
        event_id,
        1,
        delivered,
        failure.map(|f| f.code),
    )?);
    Ok(stmts)
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
    for (i, _, _) in calls {
        let event_id = items[*i].event.event_id.as_str();
        if seen.contains(&event_id) {
            continue;
        }
        seen.push(event_id);
        let mine = calls
            .iter()
            .filter(|(j, _, _)| items[*j].event.event_id == event_id);
        let (mut n, mut delivered, mut last) = (0i64, None, None::<ErrorCode>);
        for (_, r, _) in mine {
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
