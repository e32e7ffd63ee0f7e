//! The `hookrelay-control` queue consumer: each drain message advances one
//! destination's drain by one step (`hookrelay_platform::parking`); a sweep
//! continuation runs the next retention step (`crate::maintenance`).

use crate::config_cache::relay_config;
use crate::maintenance::continuation;
use hookrelay_core::parking::DrainMessage;
use hookrelay_core::retention::continuation::SweepMessage;
use hookrelay_core::retry::waits::{CONFIG_INVALID_RETRY_S, DRAIN_STEP_RETRY_S};
use hookrelay_platform::parking::{run_steps, DrainCtx, COMPONENT};
use hookrelay_platform::queue_message::QueueMessage;
use hookrelay_platform::{db::error_message, log, metrics};
use worker::Env;

/// Runs each message's step (side by side, one per destination), and
/// acks or retries each on its own. A message that is not a drain message
/// is acked and logged: retrying it could never help.
pub async fn consume(messages: Vec<QueueMessage>, env: &Env) {
    let config = relay_config(env);
    let Ok(config) = &*config else {
        // The config_invalid line names the key; keep the steps until it is fixed.
        for m in &messages {
            m.retry(CONFIG_INVALID_RETRY_S);
        }
        return;
    };
    let db = match env.d1("DB") {
        Ok(db) => db,
        Err(e) => {
            log::error(
                COMPONENT,
                "d1_binding_missing",
                log::fields! {"err": error_message(&e)},
            );
            messages.iter().for_each(|m| m.retry(DRAIN_STEP_RETRY_S));
            return;
        }
    };
    let ctx = DrainCtx {
        db: &db,
        env,
        cfg: &config.delivery,
    };
    let Sorted {
        steps,
        owners,
        sweeps,
    } = sort(&messages);
    continuation::consume(&sweeps, env).await;
    let results = run_steps(&ctx, &steps).await;
    for ((message, msg), result) in owners.into_iter().zip(&steps).zip(results) {
        match result {
            Ok(()) => message.ack(),
            Err(e) => {
                log::error(
                    COMPONENT,
                    "drain_step_failed",
                    log::fields! {"generation": msg.generation, "err": error_message(&e), "next": "retry"},
                );
                message.retry(DRAIN_STEP_RETRY_S);
            }
        }
    }
    metrics::flush(env).await;
}

/// A batch sorted by kind.
#[derive(Default)]
struct Sorted<'a> {
    /// Drain steps, and the messages that carry them, in step.
    steps: Vec<DrainMessage>,
    owners: Vec<&'a QueueMessage>,
    /// Sweep continuations.
    sweeps: Vec<(&'a QueueMessage, SweepMessage)>,
}

/// Sorts a batch into drain steps and sweep continuations; any other
/// message is acked and logged.
fn sort(messages: &[QueueMessage]) -> Sorted<'_> {
    let mut sorted = Sorted::default();
    for message in messages {
        // The retention sweep continues on this queue too (src/maintenance).
        if let Some(sweep) = SweepMessage::parse(&message.body_json) {
            sorted.sweeps.push((message, sweep));
            continue;
        }
        match DrainMessage::parse(&message.body_json) {
            Some(msg) => {
                sorted.steps.push(msg);
                sorted.owners.push(message);
            }
            None => {
                log::warn(
                    COMPONENT,
                    "control_message_unknown",
                    log::fields! {"queue_message_id": message.id},
                );
                message.ack();
            }
        }
    }
    sorted
}
