//! The `webhooks` queue consumer.
//!
//! Per batch, in this order, and why each step is safe to repeat:
//! 1. decode every message (pure; a bad one becomes a poison outcome);
//! 2. ingest every decodable event in one D1 batch. The upsert is keyed by
//!    idempotency key, so a redelivery after a crash finds its row and is
//!    counted as a duplicate, never ingested twice;
//! 3. decide each message's disposition (pure, `hookrelay_core::disposition`);
//! 4. record every failed attempt in one D1 batch (the DLQ worker builds its
//!    envelope from these rows);
//! 5. hand poison messages to `webhooks-dlq` in one send. If that send fails
//!    they are retried instead of acked, so a dead letter is never lost;
//!    then log each failure at WARN;
//! 6. apply each disposition to its own message: nothing here throws, so
//!    the platform never retries the whole batch.

use crate::config_cache::relay_config;
use hookrelay_core::breaker::BreakerOpenAction;
use hookrelay_core::config::DeliveryConfig;
use hookrelay_core::disposition::{decide, Disposition, Outcome};
use hookrelay_core::error_code::{ErrorCode, Failure};
use hookrelay_core::metrics::Metric;
use hookrelay_core::poison_handoff::PoisonHandoff;
use hookrelay_core::queued_event::{decode, event_id_hint, QueuedEvent};
use hookrelay_core::retry_policy::RetrySchedule;
use hookrelay_platform::deliveries::Delivery;
use hookrelay_platform::event_store::{self, FailedAttempt};
use hookrelay_platform::log::{self, Level};
use hookrelay_platform::metrics;
use hookrelay_platform::pipeline::{self, Item};
use hookrelay_platform::{d1::error_message, now_ms, queue_send};
use serde_json::json;
use worker::Env;

/// Processes one batch of deliveries.
pub async fn consume(deliveries: Vec<Delivery>, env: &Env) {
    if deliveries.is_empty() {
        return;
    }
    let now = now_ms();
    let config = relay_config(env);
    let (schedule, delivery, open_action) = match &*config {
        Ok(c) => (
            c.retry.clone(),
            Some(&c.delivery),
            c.delivery.breaker_open_action,
        ),
        Err(_) => (RetrySchedule::default(), None, BreakerOpenAction::default()),
    };
    let decoded: Vec<Result<QueuedEvent, Failure>> =
        deliveries.iter().map(|d| decode(&d.body_json)).collect();
    let outcomes = process(env, &deliveries, &decoded, delivery, now).await;

    let mut dispositions: Vec<Disposition> = outcomes
        .iter()
        .zip(&deliveries)
        .map(|(o, d)| decide(o.clone(), d.attempts, &schedule, open_action))
        .collect();
    // Attempts are recorded before the hand-off so the DLQ worker, which may
    // pick the hand-off up at once, finds the full history.
    record_failures(env, &deliveries, &decoded, &dispositions, now).await;
    hand_off_poison(env, &deliveries, &mut dispositions, &schedule, now).await;
    log_failures(&deliveries, &decoded, &dispositions);

    let mut tally = Tally::default();
    for ((disposition, outcome), event) in dispositions.iter().zip(&outcomes).zip(&decoded) {
        tally.count(outcome, disposition);
        let source = event.as_ref().map_or("", |e| e.source.as_str());
        match disposition {
            Disposition::Ack => {}
            Disposition::Retry { failure, .. } => metrics::count(
                Metric::new("retry", "consumer")
                    .source(source)
                    .code(failure.code),
                1,
            ),
            Disposition::DeadLetter { failure } => metrics::count(
                Metric::new("dead_letter_handoff", "consumer")
                    .source(source)
                    .code(failure.code),
                1,
            ),
        }
    }
    // Counters first: once a message is acked its batch may end at any time.
    metrics::flush(env).await;
    for (delivery, disposition) in deliveries.iter().zip(&dispositions) {
        match disposition {
            Disposition::Ack | Disposition::DeadLetter { .. } => delivery.ack(),
            Disposition::Retry { delay_s, .. } => delivery.retry(*delay_s),
        }
    }
    log::info(
        "consumer",
        "batch_done",
        json!({"size": deliveries.len(), "ingested": tally.ingested, "duplicates": tally.duplicates, "retried": tally.retried, "dead_lettered": tally.dead_lettered}),
    );
}

/// Ingests (and delivers) every decodable event; undecodable ones keep their
/// poison outcome. Without a valid configuration nothing is attempted, and
/// every message is retried until the configuration is fixed.
async fn process(
    env: &Env,
    deliveries: &[Delivery],
    decoded: &[Result<QueuedEvent, Failure>],
    delivery: Option<&DeliveryConfig>,
    now: i64,
) -> Vec<Outcome> {
    let mut outcomes: Vec<Outcome> = decoded
        .iter()
        .map(|r| match r {
            Ok(_) => Outcome::Failed(Failure::new(
                ErrorCode::Unknown,
                "the relay configuration is invalid; see the config_invalid log line",
            )),
            Err(f) => Outcome::Failed(f.clone()),
        })
        .collect();
    let Some(delivery) = delivery else {
        return outcomes;
    };
    let (indexes, items): (Vec<usize>, Vec<Item>) = decoded
        .iter()
        .zip(deliveries)
        .enumerate()
        .filter_map(|(i, (r, d))| {
            r.as_ref().ok().map(|event| {
                (
                    i,
                    Item {
                        event,
                        queue_message_id: d.id.as_str(),
                    },
                )
            })
        })
        .unzip();
    if items.is_empty() {
        return outcomes;
    }
    let results = match env.d1("DB") {
        Ok(db) => pipeline::run(&db, &items, delivery, "consumer", now)
            .await
            .into_iter()
            .map(|p| p.outcome)
            .collect(),
        Err(e) => {
            let failure = Failure::new(
                ErrorCode::D1Unavailable,
                format!("D1 binding DB: {}", error_message(&e)),
            );
            vec![Outcome::Failed(failure); items.len()]
        }
    };
    for (i, outcome) in indexes.into_iter().zip(results) {
        outcomes[i] = outcome;
    }
    outcomes
}

async fn hand_off_poison(
    env: &Env,
    deliveries: &[Delivery],
    dispositions: &mut [Disposition],
    schedule: &RetrySchedule,
    now: i64,
) {
    let poison: Vec<(usize, String)> = dispositions
        .iter()
        .enumerate()
        .filter_map(|(i, disp)| match disp {
            Disposition::DeadLetter { failure } => {
                let d = &deliveries[i];
                let handoff = PoisonHandoff::new(
                    failure.clone(),
                    d.attempts,
                    d.id.clone(),
                    d.enqueued_at_ms,
                    now,
                    d.body_value(),
                );
                serde_json::to_string(&handoff).ok().map(|j| (i, j))
            }
            _ => None,
        })
        .collect();
    if poison.is_empty() {
        return;
    }
    let messages: Vec<String> = poison.iter().map(|(_, j)| j.clone()).collect();
    let sent = match env.queue("WEBHOOKS_DLQ") {
        Ok(q) => queue_send::send_json_batch(&q, &messages).await,
        Err(e) => Err(e),
    };
    if let Err(e) = sent {
        log::error(
            "consumer",
            "dlq_handoff_failed",
            json!({"count": poison.len(), "err": e.to_string()}),
        );
        for (i, _) in poison {
            if let Disposition::DeadLetter { failure } = &dispositions[i] {
                dispositions[i] = Disposition::Retry {
                    delay_s: schedule.delay_after(deliveries[i].attempts),
                    failure: failure.clone(),
                };
            }
        }
    }
}

async fn record_failures(
    env: &Env,
    deliveries: &[Delivery],
    decoded: &[Result<QueuedEvent, Failure>],
    dispositions: &[Disposition],
    now: i64,
) {
    let hints: Vec<Option<String>> = deliveries
        .iter()
        .zip(decoded)
        .map(|(d, e)| match e {
            Ok(event) => Some(event.event_id.clone()),
            Err(_) => event_id_hint(&d.body_json),
        })
        .collect();
    let attempts: Vec<FailedAttempt> = deliveries
        .iter()
        .zip(&hints)
        .zip(dispositions)
        .filter_map(|((delivery, event_id), disposition)| {
            failure_of(disposition).map(|failure| FailedAttempt {
                event_id: event_id.as_deref(),
                queue_message_id: &delivery.id,
                attempt: delivery.attempts,
                failure,
            })
        })
        .collect();
    if attempts.is_empty() {
        return;
    }
    let recorded = match env.d1("DB") {
        Ok(db) => event_store::record_attempts(&db, &attempts, now).await,
        Err(e) => Err(e),
    };
    if let Err(e) = recorded {
        // The disposition stands: a retry still happens, and a poison
        // hand-off carries its own reason.
        log::error(
            "consumer",
            "attempt_record_failed",
            json!({"count": attempts.len(), "err": error_message(&e)}),
        );
    }
}

fn failure_of(disposition: &Disposition) -> Option<&Failure> {
    match disposition {
        Disposition::Ack => None,
        Disposition::Retry { failure, .. } | Disposition::DeadLetter { failure } => Some(failure),
    }
}

/// One WARN line per failed message, in QuestKit's format, after the
/// hand-off so the line says where the message really went.
fn log_failures(
    deliveries: &[Delivery],
    decoded: &[Result<QueuedEvent, Failure>],
    dispositions: &[Disposition],
) {
    for ((delivery, event), disposition) in deliveries.iter().zip(decoded).zip(dispositions) {
        let Some(failure) = failure_of(disposition) else {
            continue;
        };
        let (next, delay_s) = match disposition {
            Disposition::Retry { delay_s, .. } => ("retry", Some(*delay_s)),
            _ => ("dead_letter", None),
        };
        let id = event
            .as_ref()
            .map_or(delivery.id.as_str(), |e| e.event_id.as_str());
        log::emit(
            Level::Warn,
            Some("[consumer] ingest failed"),
            "consumer",
            "ingest_failed",
            json!({
                "id": id,
                "queue_message_id": delivery.id,
                "attempts": delivery.attempts,
                "err": {"code": failure.code, "class": failure.class(), "message": failure.message},
                "next": next,
                "delay_s": delay_s,
            }),
        );
    }
}

#[derive(Default)]
struct Tally {
    ingested: u32,
    duplicates: u32,
    retried: u32,
    dead_lettered: u32,
}

impl Tally {
    fn count(&mut self, outcome: &Outcome, disposition: &Disposition) {
        match (outcome, disposition) {
            (Outcome::Ingested, _) => self.ingested += 1,
            (Outcome::Duplicate, _) => self.duplicates += 1,
            (_, Disposition::Retry { .. }) => self.retried += 1,
            (_, Disposition::DeadLetter { .. }) => self.dead_lettered += 1,
            (Outcome::Failed(_), Disposition::Ack) => {}
        }
    }
}
