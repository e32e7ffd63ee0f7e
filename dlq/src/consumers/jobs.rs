//! The `hookrelay-jobs` consumer: each message is one step of one job.

use crate::config_cache::config;
use crate::entries::relay_client::Relay;
use crate::jobs::resume::resume_stalled;
use crate::jobs::step::{self, StepEnv};
use hookrelay_core::dead_letter::store_retry::store_retry_delay_s;
use hookrelay_core::jobs::JobStep;
use hookrelay_core::metrics::Component;
use hookrelay_core::retry::waits::{JOB_NO_RELAY_RETRY_BASE_S, JOB_UNCONFIGURED_RETRY_BASE_S};
use hookrelay_platform::db::error_message;
use hookrelay_platform::log;
use hookrelay_platform::queue_message::QueueMessage;
use worker::Env;

/// Runs every step of the batch, each acked once done or retried with a
/// growing delay (its entries' progress is in D1, so a retry repeats
/// nothing that finished).
pub async fn consume(messages: Vec<QueueMessage>, env: &Env) {
    let cfg = config(env);
    let (Ok(cfg), Ok(db)) = (&*cfg, env.d1("DB")) else {
        for m in &messages {
            m.retry(store_retry_delay_s(
                JOB_UNCONFIGURED_RETRY_BASE_S,
                m.attempts,
            ));
        }
        return;
    };
    let relay = match Relay::from_env(env, &cfg.internal_key) {
        Ok(r) => r,
        Err(e) => {
            log::error(Component::Admin, "job_step_failed", log::fields! {"err": e});
            for m in &messages {
                m.retry(store_retry_delay_s(JOB_NO_RELAY_RETRY_BASE_S, m.attempts));
            }
            return;
        }
    };
    let s = StepEnv {
        env,
        db: &db,
        relay: &relay,
        max_replay_attempts: cfg.dlq.max_replay_attempts,
    };
    for m in &messages {
        let Ok(msg) = serde_json::from_str::<JobStep>(&m.body_json) else {
            log::warn(
                Component::Admin,
                "job_step_unreadable",
                log::fields! {"queue_message_id": m.id},
            );
            m.ack();
            continue;
        };
        match step::run(&s, &msg).await {
            Ok(()) => m.ack(),
            Err(e) => {
                let delay_s = store_retry_delay_s(1, m.attempts);
                log::error(
                    Component::Admin,
                    "job_step_failed",
                    log::fields! {"job_id": msg.job_id, "attempts": m.attempts, "err": error_message(&e), "next": "retry", "delay_s": delay_s},
                );
                m.retry(delay_s);
            }
        }
    }
    hookrelay_platform::metrics::flush(env).await;
    resume_stalled(&db, env).await;
}
