//! The sweep's continuation on `hookrelay-control`: while a step leaves
//! work, the next step runs from a fenced message a second later, never
//! from a loop inside one invocation (Workers' limits are per invocation).
//!
//! A message of generation `g` runs its step only while `g` is current,
//! and claims the next generation only after the step succeeded: a step
//! that fails leaves `g` current, so the retried message still runs (the
//! chain carries on), and a duplicate of a message that already ran finds
//! itself stale. Steps never overlap: each runs under the sweep's lease.

use super::{lease, over_budget, sweep_once};
use crate::config_cache::relay_config;
use hookrelay_core::config::RelayConfig;
use hookrelay_core::maintenance::lease::Lease;
use hookrelay_core::metrics::Component;
use hookrelay_core::retention::continuation::{SweepMessage, CONTINUE_AFTER_S};
use hookrelay_core::retry::waits::{SWEEP_BUSY_RETRY_S, SWEEP_STEP_RETRY_S};
use hookrelay_core::support::subrequests::Budget;
use hookrelay_platform::db::{error_message, sweep_state};
use hookrelay_platform::queue_message::QueueMessage;
use hookrelay_platform::queue_send::send_json_after;
use hookrelay_platform::{log, now_ms};
use worker::Env;

/// Sends the continuation of chain `generation`.
pub async fn send(env: &Env, generation: i64) -> worker::Result<()> {
    let queue = env.queue("CONTROL")?;
    send_json_after(
        &queue,
        &SweepMessage::new(generation).to_json(),
        CONTINUE_AFTER_S,
    )
    .await
}

/// Runs the step of each continuation still current (at most one can be),
/// and continues the chain while work is left, within one subrequest
/// budget for the batch (one invocation). A stale one is acked; one that
/// finds another run holding the lease waits for it (if that run started
/// a new chain, this one is stale when it comes back); one whose step
/// failed is retried, still current.
pub async fn consume(messages: &[(&QueueMessage, SweepMessage)], env: &Env) {
    let mut budget = Budget::per_invocation();
    for (message, sweep) in messages {
        match step(env, sweep.generation, &mut budget).await {
            Ok(true) => message.ack(),
            Ok(false) => message.retry(SWEEP_BUSY_RETRY_S),
            Err(e) => {
                log::error(
                    Component::Sweep,
                    "sweep_continuation_failed",
                    log::fields! {"generation": sweep.generation, "err": error_message(&e), "next": "retry", "retry_in_s": SWEEP_STEP_RETRY_S},
                );
                message.retry(SWEEP_STEP_RETRY_S);
            }
        }
    }
}

/// Runs continuation `generation` under the sweep's lease: `false` when
/// another run holds it.
async fn step(env: &Env, generation: i64, budget: &mut Budget) -> worker::Result<bool> {
    let config = relay_config(env);
    let cfg = config
        .as_ref()
        .as_ref()
        .map_err(|e| worker::Error::RustError(e.to_string()))?;
    let now = now_ms();
    let lease::Turn::Held(held) = lease::take(env, Lease::Sweep, now, budget).await? else {
        return Ok(false);
    };
    let stepped = current_step(env, cfg, generation, now, budget, &held).await;
    match stepped {
        // The step's closing batch gave the lease back.
        Ok(Stepped::Released) => {}
        Ok(Stepped::Stale) | Err(_) => lease::release(env, held, budget).await,
    }
    stepped.map(|_| true)
}

/// How a continuation's step ended, when it did not fail.
enum Stepped {
    /// It ran; its closing batch claimed the next generation and gave the
    /// lease back.
    Released,
    /// Its generation was no longer current: nothing ran.
    Stale,
}

async fn current_step(
    env: &Env,
    cfg: &RelayConfig,
    generation: i64,
    now: i64,
    budget: &mut Budget,
    held: &lease::Held,
) -> worker::Result<Stepped> {
    let db = env.d1("DB")?;
    budget.spend(1).map_err(over_budget)?;
    if !sweep_state::is_current(&db, generation).await? {
        return Ok(Stepped::Stale);
    }
    // Claimed only in the step's closing batch: had the step failed, this
    // message would still be current when it is retried.
    let after = vec![
        sweep_state::claim_statement(&db, Some(generation))?,
        held.release_statement(&db)?,
    ];
    let (answer, after) = sweep_once(env, &db, cfg, now, budget, after).await?;
    // None: a cron or a maintenance run started a newer chain meanwhile.
    let next = sweep_state::read_claim(&after[0])?;
    if let (Some(next), Some(true)) = (next, answer["more"].as_bool()) {
        budget.spend(1).map_err(over_budget)?;
        send(env, next).await?;
    }
    Ok(Stepped::Released)
}
