//! The sweep's continuation on `hookrelay-control`: while a step leaves
//! work, the next step runs from a fenced message a second later, never
//! from a loop inside one invocation (Workers' limits are per invocation).

use super::{lease, sweep_once};
use crate::config_cache::relay_config;
use hookrelay_core::config::RelayConfig;
use hookrelay_core::metrics::Component;
use hookrelay_core::retention::continuation::{SweepMessage, CONTINUE_AFTER_S};
use hookrelay_platform::db::{error_message, sweep_state};
use hookrelay_platform::queue_message::QueueMessage;
use hookrelay_platform::queue_send::send_json_after;
use hookrelay_platform::{log, now_ms};
use worker::Env;

/// Seconds before a step that failed is tried again.
const RETRY_S: u32 = 30;
/// Seconds before a step that found the lease held looks again.
const BUSY_RETRY_S: u32 = 5;

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
/// and continues the chain while work is left. A stale one is acked; one
/// that finds another run holding the lease waits for it (if that run
/// started a new chain, this one is stale when it comes back).
pub async fn consume(messages: &[(&QueueMessage, SweepMessage)], env: &Env) {
    for (message, sweep) in messages {
        match step(env, sweep.generation).await {
            Ok(true) => message.ack(),
            Ok(false) => message.retry(BUSY_RETRY_S),
            Err(e) => {
                log::error(
                    Component::Sweep,
                    "sweep_continuation_failed",
                    log::fields! {"generation": sweep.generation, "err": error_message(&e), "next": "retry"},
                );
                message.retry(RETRY_S);
            }
        }
    }
}

/// Runs continuation `generation` under the lease: `false` when another
/// run holds it.
async fn step(env: &Env, generation: i64) -> worker::Result<bool> {
    let config = relay_config(env);
    let cfg = config
        .as_ref()
        .as_ref()
        .map_err(|e| worker::Error::RustError(e.to_string()))?;
    let now = now_ms();
    let lease::Turn::Held(held) = lease::take(env, now).await? else {
        return Ok(false);
    };
    let stepped = claimed_step(env, cfg, generation, now).await;
    lease::release(env, held).await;
    stepped.map(|()| true)
}

async fn claimed_step(
    env: &Env,
    cfg: &RelayConfig,
    generation: i64,
    now: i64,
) -> worker::Result<()> {
    let db = env.d1("DB")?;
    let Some(next) = sweep_state::claim(&db, Some(generation)).await? else {
        return Ok(());
    };
    let answer = sweep_once(env, &db, cfg, now).await?;
    if answer["more"].as_bool() == Some(true) {
        send(env, next).await?;
    }
    Ok(())
}
