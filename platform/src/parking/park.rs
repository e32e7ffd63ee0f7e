//! Parking the deliveries the deliver phase decided to park: no network
//! call was made; each waits on its row (`deliveries.state = parked`) and
//! its message is acked (`Outcome::Parked`), so it spends no retry budget
//! and makes no DLQ entry. Its destination's drain is made sure of.

use crate::db::{deliveries, drains, error_message, event_steps};
use crate::pipeline::call::{Attempt, Call};
use crate::pipeline::item::{DeliveryItem, Processed};
use crate::{log, metrics, now_ms, queue_send};
use hookrelay_core::metrics::{Component, Metric, MetricName};
use hookrelay_core::parking::drain_plan::STALE_AFTER_MS;
use hookrelay_core::parking::{delay_s_until, drains_to_ensure, DrainMessage, ParkCause};
use hookrelay_core::retry::disposition::Outcome;
use hookrelay_core::state::error_code::ErrorCode;
use hookrelay_core::state::{DownstreamResult, EventStep};
use hookrelay_core::support::d1_error::classify_d1_error;
use worker::{D1Database, D1PreparedStatement, Queue};

/// Parks every `parked` call in one round trip, then makes sure each
/// destination has a drain (`hookrelay_core::parking::drains_to_ensure`).
/// If the write fails the events keep their lease (it expires) and their
/// messages are retried.
pub async fn park(
    (db, claimed_at): (&D1Database, i64),
    items: &[DeliveryItem],
    parked: Vec<Call>,
    out: &mut [Processed],
    component: Component,
    control: Option<&Queue>,
) {
    let now = now_ms();
    let parks: Vec<Park> = parked
        .iter()
        .filter_map(|(i, attempt)| match attempt {
            Attempt::Parked {
                destination,
                cause,
                probe_at_ms,
                why,
                answer,
            } => Some(Park {
                index: *i,
                destination: destination.as_str(),
                probe_at_ms: *probe_at_ms,
                cause: *cause,
                why: *why,
                answer: answer.as_ref().map(|f| f.message.as_str()),
            }),
            Attempt::Called(_) | Attempt::HandedOn | Attempt::SentOn => None,
        })
        .collect();
    let written = match statements((db, claimed_at), items, &parks, component, now) {
        Ok(statements) => crate::db::batch(db, statements).await.map(|_| ()),
        Err(e) => Err(e),
    };
    if let Err(e) = written {
        return fail_all(&parked, out, &error_message(&e));
    }
    mark_parked(items, &parked, out, component);
    let drains = drains_to_ensure(
        parks
            .iter()
            .map(|p| (p.destination, p.probe_at_ms, p.cause)),
        now,
    );
    for drain in drains {
        let (destination, cause) = (drain.destination, drain.cause);
        let at = drain.first_step_at_ms;
        ensure_drain(db, control, destination, cause, at, component).await;
    }
}

/// One park.
struct Park<'a> {
    /// The item's index.
    index: usize,
    destination: &'a str,
    /// When its breaker admits the next probe (or its rate the next
    /// start), when known.
    probe_at_ms: Option<i64>,
    /// The failure that opened the breaker.
    cause: Option<ErrorCode>,
    why: ParkCause,
    /// The message of the call that parked it, when one was made.
    answer: Option<&'a str>,
}

/// Each park's row update and its step in the event's story.
fn statements(
    (db, claimed_at): (&D1Database, i64),
    items: &[DeliveryItem],
    parks: &[Park<'_>],
    component: Component,
    now: i64,
) -> worker::Result<Vec<D1PreparedStatement>> {
    let mut statements = Vec::with_capacity(parks.len() * 2);
    let mut seen: Vec<&str> = Vec::new();
    for p in parks {
        let (destination, cause, why) = (p.destination, p.cause, p.why);
        let event_id = &items[p.index].event.event_id;
        let detail = why.detail_after(destination, p.answer);
        let step = event_steps::StepRecord {
            event_id,
            step: EventStep::Parked,
            component,
            code: cause,
            detail: &detail,
            at_ms: now,
        };
        statements.push(deliveries::park_statement(
            db,
            (event_id, destination),
            claimed_at,
            cause,
            why.as_str(),
            now,
        )?);
        statements.push(event_steps::insert(db, &step)?);
    }
    for &Park { index, cause, .. } in parks {
        let event_id = items[index].event.event_id.as_str();
        if !seen.contains(&event_id) {
            seen.push(event_id);
            statements.push(deliveries::summary_statement(db, event_id, 0, None, cause)?);
        }
    }
    Ok(statements)
}

/// Folds the parks into the outcomes (acked, no retry budget), and counts
/// and logs each one.
fn mark_parked(
    items: &[DeliveryItem],
    parked: &[Call],
    out: &mut [Processed],
    component: Component,
) {
    for (i, attempt) in parked {
        let Attempt::Parked {
            destination,
            cause,
            why,
            answer,
            ..
        } = attempt
        else {
            continue;
        };
        let event = &items[*i].event;
        out[*i].downstream = DownstreamResult::Parked;
        out[*i].outcome = Outcome::Parked;
        metrics::count(
            Metric::new(MetricName::Parked, component).source(&event.source),
            1,
        );
        log::info(
            component,
            "parked",
            log::fields! {"id": event.event_id, "source": event.source, "destination": destination, "cause": cause, "park_cause": why.as_str(), "err": answer.as_ref().map(|f| f.message.as_str())},
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
    let label = destination;
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
    send_first_step(
        control,
        destination,
        generation,
        delay_s_until(probe_at_ms, now),
        component,
    )
    .await;
}

/// Sends the first step of each drain the copy of legacy parked events
/// started (`deliveries::copy_legacy`, read with
/// `drains::read_started`), due at once. A failed send is logged: the
/// row stays, and the periodic resume check sends it later.
pub async fn start_drains(
    control: Option<&Queue>,
    started: &[(String, i64)],
    component: Component,
) {
    for (destination, generation) in started {
        send_first_step(control, destination, *generation, 0, component).await;
    }
}

/// Sends the message of step `generation` of `destination`'s drain after
/// `delay_s`, and logs what came of it.
async fn send_first_step(
    control: Option<&Queue>,
    destination: &str,
    generation: i64,
    delay_s: u32,
    component: Component,
) {
    let label = destination;
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
