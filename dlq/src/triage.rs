//! Triage of `webhooks-dlq`: one envelope per dead letter, stored, logged,
//! then acked. Anything that prevents storing it retries the message
//! instead, because a dead letter acked before it is stored is lost.

use hookrelay_core::config::DlqConfig;
use hookrelay_core::dlq_capacity::evictions_needed;
use hookrelay_core::dlq_store_retry::store_retry_delay_s;
use hookrelay_core::envelope::{self, DeadLetterInput, Envelope};
use hookrelay_core::metrics::{Component, Metric, MetricName};
use hookrelay_core::queued_event::EventBody;
use hookrelay_core::state::StoreOutcome;
use hookrelay_platform::db::{attempts, dead_letters, error_message, events, payloads};
use hookrelay_platform::env_config::WorkerEnv;
use hookrelay_platform::queue_message::QueueMessage;
use hookrelay_platform::{log, metrics, now_ms};
use serde_json::json;
use worker::{D1Database, Env};

const COMPONENT: Component = Component::Dlq;

/// Triage every message of a batch, each on its own.
pub async fn triage(messages: Vec<QueueMessage>, env: &Env) {
    let config = match DlqConfig::load(&WorkerEnv(env)) {
        Ok(c) => c,
        Err(e) => {
            log::error(
                COMPONENT,
                "config_invalid",
                json!({"key": e.key, "problem": e.problem}),
            );
            for m in &messages {
                m.retry(30);
            }
            return;
        }
    };
    let db = match env.d1("DB") {
        Ok(db) => db,
        Err(e) => {
            log::error(
                COMPONENT,
                "d1_binding_missing",
                json!({"err": error_message(&e)}),
            );
            for m in &messages {
                retry_store(m, &config, "the D1 binding DB is missing");
            }
            metrics::flush(env).await;
            return;
        }
    };
    for message in &messages {
        match triage_one(&db, message, &config).await {
            Ok(()) => message.ack(),
            Err(e) => retry_store(message, &config, &error_message(&e)),
        }
    }
    metrics::flush(env).await;
}

/// Retries a dead letter that could not be stored, with a growing delay so
/// the retries outlast the queue's retention; logged and counted each time.
fn retry_store(message: &QueueMessage, config: &DlqConfig, err: &str) {
    let delay_s = store_retry_delay_s(config.retry_delay_s, message.attempts);
    metrics::count(Metric::new(MetricName::DlqStoreFailed, COMPONENT), 1);
    log::error(
        COMPONENT,
        "store_failed",
        json!({"queue_message_id": message.id, "attempts": message.attempts, "err": err, "next": "retry", "delay_s": delay_s}),
    );
    message.retry(delay_s);
}

/// Builds the envelope from the message and the consumer's attempt record.
async fn envelope_of(db: &D1Database, message: &QueueMessage) -> worker::Result<Envelope> {
    let body = message.body_value();
    let original_id = envelope::original_message_id(&body, &message.id).to_string();
    let history = attempts::history(db, &original_id).await?;
    let stored_body = match envelope::event_of(&body).map(|e| e.body) {
        Some(EventBody::Stored { body_ref, .. }) => payloads::load(db, &body_ref).await?,
        _ => None,
    };
    Ok(envelope::build(DeadLetterInput {
        body: &body,
        queue_message_id: &message.id,
        enqueued_at_ms: message.enqueued_at_ms,
        history,
        stored_body: stored_body.as_deref(),
        now_ms: now_ms(),
    }))
}

async fn triage_one(
    db: &D1Database,
    message: &QueueMessage,
    config: &DlqConfig,
) -> worker::Result<()> {
    let env = envelope_of(db, message).await?;
    let now = env.timing.dead_lettered_at_ms;
    let (outcome, pending) = dead_letters::store(db, &env, now).await?;
    mark_event_failed(db, &env).await;
    count_stored(&env, outcome);
    log::emit(
        log::Level::Warn,
        None,
        COMPONENT,
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
            "outcome": outcome,
        }),
    );
    evict_over_capacity(db, pending, config.capacity, now).await
}

/// "Did this webhook arrive?" should say it failed, not that it is still
/// pending. Best effort: the dead letter is already safe, and the events
/// table may be the very thing that is broken.
async fn mark_event_failed(db: &D1Database, env: &Envelope) {
    let Some(event_id) = env.identity.event_id.as_deref() else {
        return;
    };
    if let Err(e) = events::mark_dead_lettered(db, event_id).await {
        log::warn(
            COMPONENT,
            "event_status_not_updated",
            json!({"event_id": event_id, "err": error_message(&e)}),
        );
    }
}

fn count_stored(env: &Envelope, outcome: StoreOutcome) {
    let name = match outcome {
        StoreOutcome::Stored => MetricName::DeadLettered,
        StoreOutcome::Deduped => MetricName::DlqDeduped,
        StoreOutcome::Redelivered => return,
    };
    let source = env.identity.source.as_deref().unwrap_or("");
    metrics::count(
        Metric::new(name, COMPONENT)
            .source(source)
            .code(env.failure.code),
        1,
    );
}

async fn evict_over_capacity(
    db: &D1Database,
    pending: u64,
    capacity: u64,
    now: i64,
) -> worker::Result<()> {
    let evict = evictions_needed(pending, capacity);
    if evict == 0 {
        return Ok(());
    }
    metrics::count(Metric::new(MetricName::DropOverflow, COMPONENT), evict);
    for id in dead_letters::evict_oldest(db, evict, now).await? {
        log::warn(
            COMPONENT,
            "evicted",
            json!({"id": id, "reason": "capacity", "capacity": capacity}),
        );
    }
    Ok(())
}
