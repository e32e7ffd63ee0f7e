//! Phase 2, for one destination: the batch's calls in concurrent waves
//! (planned by `hookrelay_core::deliver::breaker::waves`), its breaker read once
//! before (by `deliver`) and written once after, plus a probe claim when
//! one is due.

use super::call::{body_of, call_destination, Attempt, Call, Ctx};
use super::scheduler::Slot;
use crate::breaker_store::{claim_probe, write_folded};
use crate::db::{breakers, error_message};
use crate::join::join_all;
use crate::paced::sleep_until;
use crate::{log, now_ms};
use hookrelay_core::deliver::breaker::waves::{DestinationWaves, Wave};
use hookrelay_core::deliver::breaker::{
    after_lost_claim, next_probe_at, BreakerState, LostClaim, STATE_WHEN_UNREADABLE,
};
use hookrelay_core::deliver::call_scheduler::Ask;
use hookrelay_core::deliver::pacing::paced_start;
use hookrelay_core::deliver::response::{breaker_cause, parks_destination};
use hookrelay_core::deliver::{Destination as Configured, Target};
use hookrelay_core::parking::{
    after_destination_refused, parks_behind_drain, when_rejected, NoCall, ParkCause, Rejected,
};
use hookrelay_core::state::error_code::{ErrorCode, Failure};

/// One destination of a batch.
pub(super) struct Destination<'a> {
    /// The destination's name (its breaker's and drain's key).
    pub name: &'a str,
    /// Its leased items, in arrival order.
    pub indexes: Vec<usize>,
    /// Its drain, with the cause it recorded, when one is running.
    pub drain: Option<Option<ErrorCode>>,
    /// Its stored breaker and version; `None` when D1 could not say.
    pub stored: Option<(BreakerState, i64)>,
}

/// Calls, parks or refuses every item of `d`.
pub(super) async fn run(ctx: &Ctx<'_>, d: Destination<'_>) -> Vec<Call> {
    let mut stored = d.stored.unwrap_or((STATE_WHEN_UNREADABLE, 0));
    if parks_behind_drain(d.drain.is_some(), ctx.cfg.breaker_open_action, ctx.caller) {
        // The breaker's cause while it is open, else the drain's record of it.
        let cause = stored.0.cause().or(d.drain.flatten());
        return d
            .indexes
            .iter()
            .map(|&i| (i, parked(d.name, cause, None, ParkCause::Drain)))
            .collect();
    }
    let mut waves = DestinationWaves::new(stored.0, d.indexes);
    let mut out = Vec::new();
    let mut lost_claims = 0u32;
    loop {
        let now = now_ms();
        match waves.next(now, &ctx.cfg.breaker) {
            Wave::Done => break,
            Wave::Call(indexes) => call_wave(ctx, &mut waves, indexes, &mut out).await,
            Wave::Probe { index, next } => {
                let probe = Probe { index, next };
                let claim = (&mut stored, &mut lost_claims);
                if let After::Stop =
                    probe_wave(ctx, d.name, &mut waves, probe, claim, &mut out).await
                {
                    break;
                }
            }
            Wave::Refuse {
                indexes,
                retry_at_ms,
                cause,
            } => {
                let rejected = Rejected { retry_at_ms, cause };
                for i in indexes {
                    out.push((i, refused(ctx, d.name, rejected, now)));
                }
            }
        }
    }
    if let Err(e) = write_folded(
        ctx.db,
        ctx.component,
        d.name,
        &mut waves,
        stored,
        &ctx.cfg.breaker,
        now_ms(),
    )
    .await
    {
        unwritable(ctx, d.name, &e);
    }
    out
}

/// A due probe: the call that probes and the state that claims it.
struct Probe {
    index: usize,
    next: BreakerState,
}

/// Whether the destination's loop goes on.
enum After {
    Next,
    Stop,
}

/// Claims the probe, then makes it alone. A lost claim reloads the state
/// and gives the probe back; one that keeps losing refuses the rest. An
/// unwritable breaker admits the probe (`ADMISSION_WHEN_UNREADABLE`).
async fn probe_wave(
    ctx: &Ctx<'_>,
    name: &str,
    waves: &mut DestinationWaves,
    Probe { index, next }: Probe,
    (stored, lost_claims): (&mut (BreakerState, i64), &mut u32),
    out: &mut Vec<Call>,
) -> After {
    let now = now_ms();
    match claim_probe(ctx.db, ctx.component, name, *stored, next, now).await {
        Ok(true) => *stored = (next, stored.1 + 1),
        Ok(false) => {
            *lost_claims += 1;
            match after_lost_claim(*lost_claims, stored.0, now, &ctx.cfg.breaker) {
                LostClaim::Reload => {
                    if let Ok(newer) = breakers::load(ctx.db, name).await {
                        *stored = newer;
                        waves.reloaded(newer.0, Some(index), now, &ctx.cfg.breaker);
                        return After::Next;
                    }
                }
                LostClaim::GiveUp { retry_at_ms, cause } => {
                    let rest = waves.take_rest();
                    refuse(
                        ctx,
                        name,
                        (index, rest),
                        Rejected { retry_at_ms, cause },
                        out,
                    );
                    return After::Stop;
                }
            }
        }
        Err(e) => unwritable(ctx, name, &e),
    }
    waves.probe_claimed(next);
    call_wave(ctx, waves, vec![index], out).await;
    After::Next
}

/// Makes one wave's calls concurrently and folds their health in call
/// order. A refused credential or a redirect has opened the breaker by
/// then; the parking consumer parks its event (cause `auth` or `redirect`)
/// rather than failing it.
async fn call_wave(
    ctx: &Ctx<'_>,
    waves: &mut DestinationWaves,
    indexes: Vec<usize>,
    out: &mut Vec<Call>,
) {
    let Some(d) = indexes
        .first()
        .and_then(|&i| ctx.cfg.destination(&ctx.items[i].destination))
    else {
        let name = indexes
            .first()
            .map_or("", |&i| ctx.items[i].destination.as_str());
        let failed = |i| (i, Attempt::Called(Err(super::not_configured(name))));
        return out.extend(indexes.into_iter().map(failed));
    };
    let (indexes, results) = scheduled_calls(ctx, d, indexes, out).await;
    let credentialed = d.auth.is_some();
    let health: Vec<Option<ErrorCode>> = results
        .iter()
        .map(|r| breaker_cause(r, credentialed))
        .collect();
    waves.fold(&health, now_ms(), &ctx.cfg.breaker);
    let probe_at = next_probe_at(waves.state(), &ctx.cfg.breaker);
    let action = ctx.cfg.breaker_open_action;
    out.extend(indexes.into_iter().zip(results).map(|(i, r)| {
        let park = match (probe_at, parks_destination(&r, credentialed)) {
            (Some(at), Some(code)) => after_destination_refused(code, action, ctx.caller, at),
            _ => None,
        };
        match park {
            Some(NoCall::Park { cause, probe_at_ms }) => {
                let mut park = parked(&d.name, cause, probe_at_ms, ParkCause::Breaker);
                if let (Attempt::Parked { answer, .. }, Err(f)) = (&mut park, r) {
                    *answer = Some(f);
                }
                (i, park)
            }
            _ => (i, Attempt::Called(r)),
        }
    }));
}

/// One wave's calls, each started when the invocation's scheduler gives
/// it a turn (after its rate's reserved start): the items called with
/// their results; an item handed on instead goes to `out` as such.
async fn scheduled_calls(
    ctx: &Ctx<'_>,
    d: &Configured,
    indexes: Vec<usize>,
    out: &mut Vec<Call>,
) -> (Vec<usize>, Vec<Result<(), Failure>>) {
    let destination = ctx
        .cfg
        .destinations
        .iter()
        .position(|x| x.name == d.name)
        .unwrap_or(0);
    let service = matches!(d.target, Target::Service(_));
    let calls = indexes.iter().map(|&i| {
        let item = &ctx.items[i];
        let start = ctx.starts.get(i).copied().flatten();
        async move {
            // The start its destination's rate reserved (`super::rate`).
            if let Some(at) = start {
                sleep_until(at).await;
            }
            let body = match body_of(&item.event, &ctx.stored) {
                Ok(body) => body,
                Err(f) => return Some(Err(f)),
            };
            let ask = Ask {
                destination,
                item: i,
                service,
                body_bytes: body.len() as u64,
            };
            match ctx.scheduler.turn(ask).await {
                Slot::HandOn => None,
                Slot::Start(id) => {
                    if let (Some(at), Some(rate)) = (start, d.rate_per_s) {
                        // A turn that came after its reserved start moves
                        // the start, never bunching it with the previous.
                        let prev = ctx.last_starts.borrow().get(&destination).copied();
                        let at = paced_start(at, prev, rate).max(now_ms());
                        ctx.last_starts.borrow_mut().insert(destination, at);
                        sleep_until(at).await;
                    }
                    let r = call_destination(ctx.env, &item.event, body, d, ctx.cfg).await;
                    ctx.scheduler.done(id);
                    Some(r)
                }
            }
        }
    });
    let answered: Vec<Option<Result<(), Failure>>> = join_all(calls).await;
    let mut called = (Vec::new(), Vec::new());
    for (i, r) in indexes.into_iter().zip(answered) {
        match r {
            Some(r) => {
                called.0.push(i);
                called.1.push(r);
            }
            None => out.push((i, Attempt::HandedOn)),
        }
    }
    called
}

/// A probe claim kept losing: the probe and the rest of the batch are
/// refused as an open breaker refuses them.
fn refuse(
    ctx: &Ctx<'_>,
    name: &str,
    (probe, rest): (usize, Vec<usize>),
    rejected: Rejected,
    out: &mut Vec<Call>,
) {
    let now = now_ms();
    for i in std::iter::once(probe).chain(rest) {
        out.push((i, refused(ctx, name, rejected, now)));
    }
}

/// What a call the breaker refuses comes to: parked, or failed with
/// `CIRCUIT_OPEN` (`hookrelay_core::parking::when_rejected`).
fn refused(ctx: &Ctx<'_>, name: &str, rejected: Rejected, now: i64) -> Attempt {
    let action = ctx.cfg.breaker_open_action;
    match when_rejected(rejected, action, ctx.caller, name, now) {
        NoCall::Park { cause, probe_at_ms } => parked(name, cause, probe_at_ms, ParkCause::Breaker),
        NoCall::Refuse(f) => Attempt::Called(Err(f)),
    }
}

/// A park of `name`'s delivery: `why` unless the cause says its credential
/// was refused or it redirected (`ParkCause::of_cause`).
fn parked(
    name: &str,
    cause: Option<ErrorCode>,
    probe_at_ms: Option<i64>,
    why: ParkCause,
) -> Attempt {
    Attempt::Parked {
        destination: name.to_owned(),
        cause,
        probe_at_ms,
        why: ParkCause::of_cause(cause, why),
        answer: None,
    }
}

fn unwritable(ctx: &Ctx<'_>, name: &str, e: &worker::Error) {
    log::error(
        ctx.component,
        "breaker_unwritable",
        log::fields! {"destination": name, "err": error_message(e)},
    );
}
