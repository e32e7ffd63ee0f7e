//! The `deliveries` queue consumer: one message per delivery (one event
//! to one destination), so each delivery has its own platform `attempts`,
//! its own `msg.retry` delays (its destination's `Retry-After` included)
//! and its own `max_retries` budget: a 5xx at one destination never spends
//! another's attempts, and a poison answer dead-letters that delivery alone.
//!
//! Per batch, in this order:
//! 1. decode every message (pure; a bad one is poison);
//! 2. run `hookrelay_platform::pipeline::deliver`: the leases, the events
//!    and the breakers in one round trip, the calls (concurrent, per
//!    destination behind its breaker, parked while it is open), then every
//!    outcome, attempt row and event summary in one round trip;
//! 3. decide each message's disposition (pure, `hookrelay_core::retry::disposition`);
//! 4. hand poison deliveries to `webhooks-dlq` (a `PoisonHandoff` whose
//!    `original` is the `DeliveryMessage`) in one send, then mark them
//!    `dead_lettered`; a failed send retries them instead;
//! 5. apply each disposition to its own message; nothing here throws.

use crate::config_cache::relay_config;
use hookrelay_core::deliver::breaker::BreakerOpenAction;
use hookrelay_core::deliver::deliveries::message::DeliveryMessage;
use hookrelay_core::metrics::{Component, Metric, MetricName};
use hookrelay_core::parking::Caller;
use hookrelay_core::retry::disposition::{decide, Disposition, Outcome};
use hookrelay_core::retry::policy::RetrySchedule;
use hookrelay_core::state::error_code::{ErrorCode, Failure};
use hookrelay_core::state::DownstreamResult;
use hookrelay_platform::db::{deliveries, error_message};
use hookrelay_platform::log::{self, Level};
use hookrelay_platform::pipeline::{self, Carrier};
use hookrelay_platform::queue_message::QueueMessage;
use hookrelay_platform::{metrics, now_ms, poison_send};
use worker::Env;

const COMPONENT: Component = Component::Deliveries;

/// Processes one batch of delivery messages.
pub async fn consume(messages: Vec<QueueMessage>, env: &Env) {
    if messages.is_empty() {
        return;
    }
    let now = now_ms();
    let config = relay_config(env);
    let decoded: Vec<Result<DeliveryMessage, Failure>> = messages.iter().map(decode).collect();
    let (schedule, open_action, outcomes) = match &*config {
        Ok(c) => {
            let outcomes = run(env, &messages, &decoded, &c.delivery, now).await;
            (c.retry.clone(), c.delivery.breaker_open_action, outcomes)
        }
        Err(_) => {
            let f = Failure::new(
                ErrorCode::Unknown,
                "the relay configuration is invalid; see the config_invalid log line",
            );
            let outcomes = decoded
                .iter()
                .map(|d| match d {
                    Ok(_) => (DownstreamResult::NotForwarded, Outcome::Failed(f.clone())),
                    Err(e) => (DownstreamResult::NotForwarded, Outcome::Failed(e.clone())),
                })
                .collect();
            (
                RetrySchedule::default(),
                BreakerOpenAction::default(),
                outcomes,
            )
        }
    };
    let mut dispositions: Vec<Disposition> = outcomes
        .iter()
        .zip(&messages)
        .map(|((downstream, o), m)| match downstream {
            // Another isolate holds the lease: look again once it would
            // have expired, so a holder that died does not strand it.
            DownstreamResult::InFlightElsewhere => Disposition::Retry {
                delay_s: schedule.delay_after(m.attempts).max(1),
                failure: Failure::new(
                    ErrorCode::Unknown,
                    "another worker holds this delivery's lease; checking again later",
                ),
            },
            _ => decide(o.clone(), m.attempts, &schedule, open_action),
        })
        .collect();
    hand_off(env, &messages, &decoded, &mut dispositions, &schedule, now).await;
    log_failures(&messages, &decoded, &dispositions);
    metrics::flush(env).await;
    for (message, disposition) in messages.iter().zip(&dispositions) {
        match disposition {
            Disposition::Ack | Disposition::DeadLetter { .. } => message.ack(),
            Disposition::Retry { delay_s, .. } => message.retry(*delay_s),
        }
    }
}

fn decode(m: &QueueMessage) -> Result<DeliveryMessage, Failure> {
    let value = m.body_value();
    match DeliveryMessage::read(&value) {
        Some(Ok(d)) => Ok(d),
        Some(Err(e)) => Err(Failure::new(ErrorCode::SchemaMismatch, e)),
        None => Err(Failure::new(
            ErrorCode::SchemaMismatch,
            "not a delivery message (no \"kind\": \"delivery\")",
        )),
    }
}

/// Each message's downstream result and outcome.
async fn run(
    env: &Env,
    messages: &[QueueMessage],
    decoded: &[Result<DeliveryMessage, Failure>],
    cfg: &hookrelay_core::deliver::DeliveryConfig,
    now: i64,
) -> Vec<(DownstreamResult, Outcome)> {
    let mut out: Vec<(DownstreamResult, Outcome)> = decoded
        .iter()
        .map(|d| match d {
            Ok(_) => (DownstreamResult::NotForwarded, Outcome::Duplicate),
            Err(f) => (DownstreamResult::NotForwarded, Outcome::Failed(f.clone())),
        })
        .collect();
    let mut indexes = Vec::new();
    let mut requests = Vec::new();
    let mut carriers: Vec<Carrier<'_>> = Vec::new();
    for (i, (d, m)) in decoded.iter().zip(messages).enumerate() {
        if let Ok(d) = d {
            indexes.push(i);
            requests.push((d.event_id.clone(), d.destination.clone()));
            carriers.push((m.id.as_str(), m.attempts));
        }
    }
    if requests.is_empty() {
        return out;
    }
    let db = match env.d1("DB") {
        Ok(db) => db,
        Err(e) => {
            let f = Failure::new(
                ErrorCode::D1Unavailable,
                format!("D1 binding DB: {}", error_message(&e)),
            );
            for i in indexes {
                out[i] = (DownstreamResult::NotForwarded, Outcome::Failed(f.clone()));
            }
            return out;
        }
    };
    let control = env.queue("CONTROL").ok();
    let processed = pipeline::deliver(
        (&db, env),
        &requests,
        &carriers,
        cfg,
        (COMPONENT, Caller::Consumer),
        now,
        control.as_ref(),
    )
    .await;
    for (i, p) in indexes.into_iter().zip(processed) {
        out[i] = (p.downstream, p.outcome);
    }
    out
}

/// Sends every dead-letter disposition's hand-off in one call, then marks
/// those deliveries `dead_lettered`. If the send fails, each becomes what
/// the core says a failed hand-off becomes (a retry).
async fn hand_off(
    env: &Env,
    messages: &[QueueMessage],
    decoded: &[Result<DeliveryMessage, Failure>],
    dispositions: &mut [Disposition],
    schedule: &RetrySchedule,
    now: i64,
) {
    let sent = poison_send::hand_off(env, COMPONENT, messages, dispositions, schedule, now).await;
    if sent.is_empty() {
        return;
    }
    mark(env, decoded, dispositions, &sent, now).await;
}

/// Marks the deliveries whose hand-offs were `sent` as `dead_lettered`
/// (one round trip), and counts each hand-off.
async fn mark(
    env: &Env,
    decoded: &[Result<DeliveryMessage, Failure>],
    dispositions: &[Disposition],
    sent: &[usize],
    now: i64,
) {
    let keys: Vec<(&str, &str)> = sent
        .iter()
        .filter_map(|i| decoded[*i].as_ref().ok())
        .map(|d| (d.event_id.as_str(), d.destination.as_str()))
        .collect();
    for i in sent {
        if let (Ok(d), Disposition::DeadLetter { failure }) = (&decoded[*i], &dispositions[*i]) {
            metrics::count(
                Metric::new(MetricName::DeadLetterHandoff, COMPONENT)
                    .source(&d.source)
                    .code(failure.code),
                1,
            );
        }
    }
    let marked = match env.d1("DB") {
        Ok(db) => deliveries::mark_dead_lettered(&db, &keys, now).await,
        Err(e) => Err(e),
    };
    if let Err(e) = marked {
        // The hand-off is on its way; the DLQ worker's triage marks it too.
        log::error(
            COMPONENT,
            "dead_lettered_unmarked",
            log::fields! {"count": keys.len(), "err": error_message(&e)},
        );
    }
}

/// One WARN line per failed delivery message.
fn log_failures(
    messages: &[QueueMessage],
    decoded: &[Result<DeliveryMessage, Failure>],
    dispositions: &[Disposition],
) {
    for ((message, d), disposition) in messages.iter().zip(decoded).zip(dispositions) {
        let (failure, next, delay_s) = match disposition {
            Disposition::Ack => continue,
            Disposition::Retry { failure, delay_s } => (failure, "retry", Some(*delay_s)),
            Disposition::DeadLetter { failure } => (failure, "dead_letter", None),
        };
        let (id, destination) = match d {
            Ok(d) => (d.event_id.as_str(), d.destination.as_str()),
            Err(_) => (message.id.as_str(), ""),
        };
        if delay_s.is_some() {
            metrics::count(
                Metric::new(MetricName::Retry, COMPONENT).code(failure.code),
                1,
            );
        }
        log::emit(
            Level::Warn,
            Some("[consumer] delivery failed"),
            COMPONENT,
            "delivery_failed",
            log::fields! {
                "id": id,
                "destination": destination,
                "queue_message_id": message.id,
                "attempts": message.attempts,
                "err": log::fields!{"code": failure.code, "class": failure.class(), "message": failure.message},
                "next": next,
                "delay_s": delay_s,
            },
        );
    }
}
