//! Before the consumer's calls: each rated destination's starts, reserved
//! from its shared budget (DESIGN §3, "Rates"; the rule is
//! `hookrelay_core::deliver::rate_slots`) for the whole batch in one round trip.
//! A start within the short wait (`CONSUMER_MAX_WAIT_MS`) is kept, and its
//! call waits for it (`super::destination_run`); the rest park with cause
//! `rate`, spending no retry budget, and their destination's drain brings
//! them out at the rate.
//!
//! A replay reserves its one start before the pipeline (the relay's
//! internal replay route), and a drain step before each call, from the same
//! rows.

use super::call::{Attempt, Call, Ctx};
use super::claim::Destinations;
use crate::db::{error_message, rates};
use crate::now_ms;
use hookrelay_core::deliver::breaker::{admit, Admission};
use hookrelay_core::deliver::rate_slots::{Slot, SlotAsk, CONSUMER_MAX_WAIT_MS};
use hookrelay_core::parking::{parks_behind_drain, Caller, ParkCause};
use hookrelay_core::state::error_code::{ErrorCode, Failure};

/// Reserves the starts of every rated destination in `groups` (its items,
/// in arrival order) and takes the items over the rate out of them. The
/// answer: each item's start (by item index) and the calls the items
/// taken out came to (parked, or failed when D1 could not reserve).
pub(super) async fn reserve(
    ctx: &Ctx<'_>,
    groups: &mut Vec<(&str, Vec<usize>)>,
    destinations: &Destinations,
) -> (Vec<Option<i64>>, Vec<Call>) {
    let mut starts = vec![None; ctx.items.len()];
    let mut out = Vec::new();
    let asks = asks(ctx, groups, destinations);
    if asks.is_empty() {
        return (starts, out);
    }
    let named: Vec<(&str, SlotAsk)> = asks.iter().map(|&(g, a)| (groups[g].0, a)).collect();
    let grants = rates::reserve_many(ctx.db, &named).await;
    for (k, &(g, ask)) in asks.iter().enumerate() {
        let (name, indexes) = &mut groups[g];
        let taken = std::mem::take(indexes);
        let grant = match &grants {
            Ok(grants) => grants[k],
            Err(e) => {
                let f = unreservable(name, e);
                out.extend(
                    taken
                        .into_iter()
                        .map(|i| (i, Attempt::Called(Err(f.clone())))),
                );
                continue;
            }
        };
        let slots = grant.slots(taken.len() as u32, ask.spacing_ms);
        for (i, slot) in taken.into_iter().zip(slots) {
            match slot {
                Slot::StartAt(at) => {
                    starts[i] = Some(at);
                    indexes.push(i);
                }
                Slot::Over { next_free_at_ms } => out.push((i, over(name, next_free_at_ms))),
            }
        }
    }
    groups.retain(|(_, ix)| !ix.is_empty());
    (starts, out)
}

/// The consumer's asks, by group index: one per rated destination that
/// will call. One that parks behind its drain (the drain takes its own
/// turns) or whose stored breaker refuses calls asks for nothing, so no
/// start is spent on a call that is not made.
fn asks(
    ctx: &Ctx<'_>,
    groups: &[(&str, Vec<usize>)],
    destinations: &Destinations,
) -> Vec<(usize, SlotAsk)> {
    if ctx.caller != Caller::Consumer {
        return Vec::new();
    }
    let now = now_ms();
    let action = ctx.cfg.breaker_open_action;
    let calls = |name: &str| {
        let draining = destinations.draining.get(name).is_some();
        let stored = destinations.breakers.as_ref().and_then(|b| b.get(name));
        let refused = stored.is_some_and(|(state, _)| {
            matches!(
                admit(*state, now, &ctx.cfg.breaker),
                Admission::Reject { .. }
            )
        });
        !parks_behind_drain(draining, action, ctx.caller) && !refused
    };
    groups
        .iter()
        .enumerate()
        .filter(|(_, (name, _))| calls(name))
        .filter_map(|(g, (name, ix))| {
            let rate = ctx.cfg.destination(name)?.rate_per_s?;
            let wanted = u32::try_from(ix.len()).unwrap_or(u32::MAX);
            Some((g, SlotAsk::new(rate, wanted, now, CONSUMER_MAX_WAIT_MS)))
        })
        .collect()
}

/// An item over the rate: parked (cause `rate`), its drain due when the
/// budget next has a free start.
fn over(name: &str, next_free_at_ms: i64) -> Attempt {
    Attempt::Parked {
        destination: name.to_owned(),
        cause: None,
        probe_at_ms: Some(next_free_at_ms),
        why: ParkCause::Rate,
        answer: None,
    }
}

/// The failure of items whose starts D1 could not reserve: transient, so
/// their messages are retried.
fn unreservable(name: &str, e: &worker::Error) -> Failure {
    Failure::new(
        ErrorCode::D1Unavailable,
        format!(
            "the rate budget of destination '{name}' could not be reserved in D1: {}",
            error_message(e)
        ),
    )
}
