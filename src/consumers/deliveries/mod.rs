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
//! 3. decide each message's fate (pure, `hookrelay_core::retry::delivery_attempts::next`),
//!    by the attempts counted on its row, never the platform's `attempts`;
//! 4. send a message that made no call out again as a new one with its delay
//!    (spending nothing), and hand poison or sixth-failure deliveries to
//!    `webhooks-dlq` (a `PoisonHandoff` whose `original` is the
//!    `DeliveryMessage`) in one send, then mark them handed off (the
//!    triage closes them `dead_lettered` once their entry is stored); a
//!    failed send retries them instead;
//! 5. apply each disposition to its own message; nothing here throws.
//!
//! A message carrying an outcome its holder could not record
//! (`DeliveryMessage::delivered_at_ms`) records it and calls nothing.

use crate::config_cache::relay_config;
use hookrelay_core::deliver::breaker::BreakerOpenAction;
use hookrelay_core::deliver::call_scheduler::retry_budget_ms;
use hookrelay_core::deliver::deliveries::message::DeliveryMessage;
use hookrelay_core::metrics::{Component, Metric, MetricName};
use hookrelay_core::parking::Caller;
use hookrelay_core::retry::delivery_attempts::{next, MessageResult, Next};
use hookrelay_core::retry::disposition::{Disposition, Outcome};
use hookrelay_core::retry::policy::RetrySchedule;
use hookrelay_core::state::error_code::{ErrorCode, Failure};
use hookrelay_core::state::DownstreamResult;
use hookrelay_platform::db::{deliveries, error_message};
use hookrelay_platform::log;
use hookrelay_platform::pipeline::{self, Carrier};
use hookrelay_platform::queue_message::QueueMessage;
use hookrelay_platform::{metrics, now_ms, poison_send, queue_send};
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
            let outcomes = run(env, &messages, &decoded, (&c.delivery, &c.retry), now).await;
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
                    Ok(_) => unsettled(Outcome::Failed(f.clone())),
                    Err(e) => unsettled(Outcome::Failed(e.clone())),
                })
                .collect();
            (
                RetrySchedule::default(),
                BreakerOpenAction::default(),
                outcomes,
            )
        }
    };
    let attempts: Vec<u32> = outcomes
        .iter()
        .zip(&messages)
        .map(|(r, m)| r.attempt.unwrap_or(m.attempts))
        .collect();
    let nexts: Vec<Next> = outcomes
        .into_iter()
        .map(|r| next(r, &schedule, open_action, now))
        .collect();
    let mut dispositions = again(env, &messages, nexts).await;
    let handed = (messages.as_slice(), attempts.as_slice());
    hand_off(env, handed, &decoded, &mut dispositions, &schedule, now).await;
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
    (cfg, retry): (&hookrelay_core::deliver::DeliveryConfig, &RetrySchedule),
    now: i64,
) -> Vec<MessageResult> {
    let mut out: Vec<MessageResult> = decoded
        .iter()
        .map(|d| match d {
            Ok(_) => unsettled(Outcome::Duplicate),
            Err(f) => unsettled(Outcome::Failed(f.clone())),
        })
        .collect();
    let db = match env.d1("DB") {
        Ok(db) => db,
        Err(e) => {
            let f = Failure::new(
                ErrorCode::D1Unavailable,
                format!("D1 binding DB: {}", error_message(&e)),
            );
            let failed = |d: &Result<DeliveryMessage, Failure>| match d {
                Ok(_) => unsettled(Outcome::Failed(f.clone())),
                Err(e) => unsettled(Outcome::Failed(e.clone())),
            };
            return decoded.iter().map(failed).collect();
        }
    };
    let mut indexes = Vec::new();
    let mut requests = Vec::new();
    let mut carriers: Vec<Carrier<'_>> = Vec::new();
    for (i, (d, m)) in decoded.iter().zip(messages).enumerate() {
        match d {
            Ok(d) if d.delivered_at_ms.is_some() => out[i] = carried(&db, env, d).await,
            Ok(d) => {
                indexes.push(i);
                requests.push((d.event_id.clone(), d.destination.clone()));
                carriers.push((m.id.as_str(), m.attempts));
            }
            Err(_) => {}
        }
    }
    if requests.is_empty() {
        return out;
    }
    let control = env.queue("CONTROL").ok();
    let processed = pipeline::deliver(
        (&db, env),
        &requests,
        &carriers,
        // The same budget as a first attempt's: a call that cannot start
        // within it is handed on, so the batch's leases stay bounded.
        (
            cfg,
            retry,
            Some(retry_budget_ms(cfg.first_attempt_budget_ms)),
        ),
        (COMPONENT, Caller::Consumer),
        now,
        control.as_ref(),
    )
    .await;
    for (i, p) in indexes.into_iter().zip(processed) {
        out[i] = result_of(p);
    }
    out
}

/// What the pipeline's answer for one message says to the core.
fn result_of(p: pipeline::Processed) -> MessageResult {
    MessageResult {
        called: matches!(
            p.downstream,
            DownstreamResult::Delivered | DownstreamResult::Failed
        ),
        held_until: (p.downstream == DownstreamResult::InFlightElsewhere).then_some(p.lease_end),
        handed_on: p.handed_on,
        attempt: p.attempt,
        after: p.after,
        outcome: p.outcome,
    }
}

/// A message's result before any call.
fn unsettled(outcome: Outcome) -> MessageResult {
    MessageResult {
        after: None,
        called: false,
        held_until: None,
        outcome,
        handed_on: false,
        attempt: None,
    }
}

/// Records the 2xx a message carries (its holder could not), calling
/// nothing; a failed record sends it again after the first delay.
async fn carried(db: &worker::D1Database, env: &Env, d: &DeliveryMessage) -> MessageResult {
    let at = d.delivered_at_ms.unwrap_or_default();
    let key = (d.event_id.as_str(), d.destination.as_str());
    match pipeline::record_carried(db, env, key, at, COMPONENT).await {
        Ok(()) => unsettled(Outcome::Duplicate),
        // It makes no call: it goes out again as a new message (the same
        // one), so the platform never moves it to the DLQ while D1 refuses.
        Err(e) => unsettled(Outcome::Failed(Failure::new(
            ErrorCode::D1Unavailable,
            format!(
                "the carried 2xx could not be recorded: {}",
                error_message(&e)
            ),
        ))),
    }
}

/// Sends each message that made no call out again as a new message after
/// its delay, acking it (spending nothing); one whose send fails is
/// retried with that delay instead.
async fn again(env: &Env, messages: &[QueueMessage], nexts: Vec<Next>) -> Vec<Disposition> {
    let queue = env.queue("DELIVERIES").ok();
    let mut out = Vec::with_capacity(nexts.len());
    for (m, n) in messages.iter().zip(nexts) {
        out.push(match n {
            Next::Apply(d) => d,
            Next::Again { delay_s, failure } => {
                let json = m.body_value().to_string();
                let sent = match &queue {
                    Some(q) => queue_send::send_json_after(q, &json, delay_s).await,
                    None => Err(worker::Error::RustError("no DELIVERIES binding".into())),
                };
                match sent {
                    Ok(()) => Disposition::Ack,
                    Err(e) => {
                        log::warn(
                            COMPONENT,
                            "delivery_again_unsent",
                            log::fields! {"queue_message_id": m.id, "err": error_message(&e)},
                        );
                        Disposition::Retry { delay_s, failure }
                    }
                }
            }
        });
    }
    out
}

/// Sends every dead-letter disposition's hand-off in one call, then marks
/// those deliveries `dead_lettered`. If the send fails, each becomes what
/// the core says a failed hand-off becomes (a retry).
async fn hand_off(
    env: &Env,
    messages: (&[QueueMessage], &[u32]),
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

/// Marks the deliveries whose hand-offs were `sent` as handed off (one
/// round trip; the triage closes them `dead_lettered` once it stored their
/// entry, and their events are kept until then), and counts each hand-off.
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
        Ok(db) => deliveries::mark_handed_off(&db, &keys, now).await,
        Err(e) => Err(e),
    };
    if let Err(e) = marked {
        // The hand-off is on its way; the DLQ worker's triage closes it.
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
        log::delivery_failed(
            COMPONENT,
            (id, destination),
            Some((message.id.as_str(), message.attempts)),
            failure,
            (next, delay_s),
        );
    }
}
