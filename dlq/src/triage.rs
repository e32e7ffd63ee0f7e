//! Triage of `webhooks-dlq`: one envelope per dead letter, stored, logged,
//! then acked. Anything that prevents storing it retries the message
//! instead, because a dead letter acked before it is stored is lost.

use crate::dead_letter_store::{self, Stored};
use hookrelay_core::config::DlqConfig;
use hookrelay_core::envelope::{self, DeadLetterInput};
use hookrelay_platform::deliveries::Delivery;
use hookrelay_platform::env_config::WorkerEnv;
use hookrelay_platform::{d1::error_message, log, now_ms};
use serde_json::json;
use worker::Env;

/// Triage every message of a batch, each on its own.
pub async fn triage(deliveries: Vec<Delivery>, env: &Env) {
    let config = match DlqConfig::load(&WorkerEnv(env)) {
        Ok(c) => c,
        Err(e) => {
            log::error(
                "dlq",
                "config_invalid",
                json!({"key": e.key, "problem": e.problem}),
            );
            for d in &deliveries {
                d.retry(30);
            }
            return;
        }
    };
    let db = match env.d1("DB") {
        Ok(db) => db,
        Err(e) => {
            log::error(
                "dlq",
                "d1_binding_missing",
                json!({"err": error_message(&e)}),
            );
            for d in &deliveries {
                d.retry(config.retry_delay_s);
            }
            return;
        }
    };
    for delivery in &deliveries {
        let result = triage_one(&db, delivery, &config).await;
        match result {
            Ok(()) => delivery.ack(),
            Err(e) => {
                log::error(
                    "dlq",
                    "store_failed",
                    json!({"queue_message_id": delivery.id, "attempts": delivery.attempts, "err": error_message(&e), "next": "retry", "delay_s": config.retry_delay_s}),
                );
                delivery.retry(config.retry_delay_s);
            }
        }
    }
    hookrelay_platform::metrics::flush(env).await;
}

async fn triage_one(
    db: &worker::D1Database,
    delivery: &Delivery,
    config: &DlqConfig,
) -> worker::Result<()> {
    let body = delivery.body_value();
    let original_id = envelope::original_message_id(&body, &delivery.id).to_string();
    let history = dead_letter_store::attempt_history(db, &original_id).await?;
    let stored_body = match envelope::event_of(&body).map(|e| e.body) {
        Some(hookrelay_core::queued_event::EventBody::Stored { body_ref, .. }) => {
            dead_letter_store::stored_body(db, &body_ref).await?
        }
        _ => None,
    };
    let now = now_ms();
    let env = envelope::build(DeadLetterInput {
        body: &body,
        queue_message_id: &delivery.id,
        enqueued_at_ms: delivery.enqueued_at_ms,
        history,
        stored_body: stored_body.as_deref(),
        now_ms: now,
    });
    let stored = dead_letter_store::store(db, &env, config.capacity, now).await?;
    log::emit(
        log::Level::Warn,
        None,
        "dlq",
        "dead_letter",
        json!({
            "id": env.id,
            "event_id": env.identity.event_id,
            "source": env.identity.source,
            "code": env.failure.code,
            "class": env.failure.class,
            "attempts": env.delivery.attempts,
            "kind": env.kind,
            "signature": env.failure.signature,
            "outcome": stored.outcome,
        }),
    );
    for evicted in &stored.evicted {
        log::warn(
            "dlq",
            "evicted",
            json!({"id": evicted, "reason": "capacity", "capacity": config.capacity}),
        );
    }
    let Stored { .. } = stored;
    Ok(())
}
