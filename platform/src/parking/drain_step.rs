//! One drain step for one destination, from its `hookrelay-control` message.

use super::drain_deliver::{one, EventEnd};
use super::{drain_expire::expire, sleep_ms, DrainCtx, COMPONENT};
use crate::db::{deliveries, drains, error_message};
use crate::rate_turn::take_turn;
use crate::{log, now_ms, queue_send};
use hookrelay_core::deliver::rate_slots::{effective_rate, Slot, DRAIN_MAX_WAIT_MS};
use hookrelay_core::parking::drain_plan::{plan, StepPlan, STOPPED_RETRY_S};
use hookrelay_core::parking::{delay_s_until, DrainMessage};

/// What one step did, for its log line.
#[derive(Debug, Default)]
struct Report {
    delivered: u32,
    dead_lettered: u32,
    expired: u32,
    skipped: u32,
}

/// How the step ended: when the next one is due, or that the drain is over.
enum Next {
    /// No parked events remain; the drain row is gone.
    Done,
    /// The next step, `delay_s` from now, after waiting `wait_ms` here.
    After { wait_ms: i64, delay_s: u32 },
}

/// Runs the step `msg` names. A stale message (its generation is not the
/// row's) does nothing. Errors are D1 or queue failures before anything
/// was delivered; the caller retries the message.
pub async fn run(ctx: &DrainCtx<'_>, msg: &DrainMessage) -> worker::Result<()> {
    let dest = msg.destination.as_str();
    // The destination's own rate can only lower the drain's.
    let rate = ctx.cfg.destination(dest).and_then(|d| d.rate_per_s);
    let plan = plan(effective_rate(ctx.cfg.parking.drain_rate_per_s, rate));
    let now = now_ms();
    let busy_until = now + plan.step_budget_ms(ctx.cfg.timeout_ms);
    if !drains::claim_step(ctx.db, dest, msg.generation, busy_until, now).await? {
        log::info(
            COMPONENT,
            "drain_stale",
            log::fields! {"destination": dest, "generation": msg.generation},
        );
        return Ok(());
    }
    let generation = msg.generation + 1;
    let mut report = Report {
        expired: expire(ctx, dest).await,
        ..Report::default()
    };
    let rows = deliveries::oldest_parked(ctx.db, dest, plan.max_events).await?;
    let next = if rows.is_empty() {
        Next::After {
            wait_ms: 0,
            delay_s: 0,
        }
    } else {
        deliver_paced(ctx, &plan, &rows, dest, &mut report).await
    };
    // The step saw the whole backlog: end now if nothing was parked meanwhile.
    let ended = plan.may_end(rows.len(), report.skipped)
        && drains::finish(ctx.db, dest, generation).await?;
    let next = if ended { Next::Done } else { next };
    let delay_s = schedule(ctx, dest, generation, next).await;
    log::info(
        COMPONENT,
        "drain_step",
        log::fields! {
            "destination": dest,
            "generation": generation,
            "delivered": report.delivered,
            "dead_lettered": report.dead_lettered,
            "expired": report.expired,
            "skipped": report.skipped,
            "next_delay_s": delay_s,
            "done": delay_s.is_none(),
        },
    );
    Ok(())
}

/// Delivers `rows` oldest first, call starts spaced by the plan, until one
/// says stop.
async fn deliver_paced(
    ctx: &DrainCtx<'_>,
    plan: &StepPlan,
    rows: &[deliveries::DeliveryRow],
    dest: &str,
    report: &mut Report,
) -> Next {
    let start = now_ms();
    let mut calls = 0u32;
    let rate = ctx.cfg.destination(dest).and_then(|d| d.rate_per_s);
    for row in rows {
        sleep_ms(plan.call_at(start, calls) - now_ms()).await;
        if let Some(rate) = rate {
            if let Some(next) = turn(ctx, dest, rate).await {
                return next;
            }
        }
        let end = one(ctx, row, dest).await;
        match end {
            EventEnd::Delivered => report.delivered += 1,
            EventEnd::DeadLettered => report.dead_lettered += 1,
            EventEnd::Skipped => {
                report.skipped += 1;
                continue;
            }
            EventEnd::ProbeAt(at) => {
                return Next::After {
                    wait_ms: 0,
                    delay_s: delay_s_until(at, now_ms()),
                }
            }
            EventEnd::Stopped => {
                return Next::After {
                    wait_ms: 0,
                    delay_s: STOPPED_RETRY_S,
                }
            }
        }
        calls += 1;
    }
    let next = plan.next(start, calls, now_ms());
    Next::After {
        wait_ms: next.wait_ms,
        delay_s: next.delay_s,
    }
}

/// Takes the call's turn from the destination's shared rate (the consumer,
/// replays and jobs take theirs from it too), waiting for it when it is
/// near; when it is not, or D1 cannot say, the step ends here and the next
/// one is scheduled (`None`: the call may go).
async fn turn(ctx: &DrainCtx<'_>, dest: &str, rate: f64) -> Option<Next> {
    match take_turn(ctx.db, dest, rate, DRAIN_MAX_WAIT_MS).await {
        Ok(Slot::StartAt(_)) => None,
        Ok(Slot::Over { next_free_at_ms }) => Some(Next::After {
            wait_ms: 0,
            delay_s: delay_s_until(next_free_at_ms, now_ms()).max(1),
        }),
        Err(e) => {
            log::error(
                COMPONENT,
                "drain_rate_unreadable",
                log::fields! {"destination": dest, "err": error_message(&e)},
            );
            Some(Next::After {
                wait_ms: 0,
                delay_s: STOPPED_RETRY_S,
            })
        }
    }
}

/// Writes when the next step is due and sends its message; the delay sent,
/// or `None` when the drain ended. A failed send is logged: the row stays
/// and the resume check sends the step once it is overdue.
async fn schedule(ctx: &DrainCtx<'_>, dest: &str, generation: i64, next: Next) -> Option<u32> {
    let Next::After { wait_ms, delay_s } = next else {
        return None;
    };
    sleep_ms(wait_ms).await;
    let now = now_ms();
    let due = now + i64::from(delay_s) * 1000;
    let label = dest;
    let sent = async {
        if !drains::schedule(ctx.db, dest, generation, due, now).await? {
            return Ok(false);
        }
        let queue = ctx.env.queue("CONTROL")?;
        let json = DrainMessage::new(dest, generation).to_json();
        queue_send::send_json_after(&queue, &json, delay_s)
            .await
            .map(|()| true)
    };
    match sent.await {
        Ok(true) => {}
        Ok(false) => log::info(
            COMPONENT,
            "drain_superseded",
            log::fields! {"destination": label, "generation": generation},
        ),
        Err(e) => log::error(
            COMPONENT,
            "drain_send_failed",
            log::fields! {"destination": label, "generation": generation, "err": error_message(&e)},
        ),
    }
    Some(delay_s)
}
