//! Tells the relay that a dead letter could not be stored, so its watchdog
//! side raises `dlq_cannot_store` (DESIGN §5). The report goes through the
//! `RELAY` binding and the relay keeps the alarm in R2, so it reaches the
//! receiver while D1 fails. The message itself is retried regardless
//! (`retry_store`); a report that does not get through only waits for the
//! next failing batch.
//!
//! A batch notes its first failure while it settles its messages (in its
//! own `BatchStoreFailure`, a value: two batches running at once in one
//! isolate never take each other's note), and sends one report when it is
//! done: one call per batch, not per message.

use crate::config_cache::config;
use crate::entries::relay_client::Relay;
use hookrelay_core::alarms::cannot_store::StoreFailure;
use hookrelay_core::alarms::CANNOT_STORE_PATH;
use hookrelay_core::metrics::Component;
use hookrelay_core::support::redact::truncate;
use hookrelay_platform::log;
use worker::Env;

/// Sends a batch's noted failure (`hookrelay_core::dead_letter::store_retry::
/// BatchStoreFailure`) to the relay, if it noted one.
pub async fn send(env: &Env, noted: Option<StoreFailure>) {
    let Some(failure) = noted else {
        return;
    };
    let outcome = match &*config(env) {
        Ok(cfg) => match Relay::from_env(env, &cfg.internal_key) {
            Ok(relay) => {
                let body = serde_json::to_string(&failure).expect("a StoreFailure serializes");
                match relay
                    .call(CANNOT_STORE_PATH, &body, "the cannot-store report")
                    .await
                {
                    Ok((200, _)) => Ok(()),
                    Ok((status, text)) => Err(format!(
                        "the relay answered {status}: {}",
                        truncate(&text, 300)
                    )),
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e),
        },
        Err(e) => Err(format!("the configuration is invalid ({})", e.key)),
    };
    if let Err(e) = outcome {
        log::error(
            Component::Dlq,
            "cannot_store_report_failed",
            log::fields! {"queue_message_id": failure.queue_message_id, "err": e, "next": "the next failing batch reports again"},
        );
    }
}
