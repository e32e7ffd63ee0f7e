//! The `webhooks` queue consumer.
//!
//! Per batch, in this order, and why each step is safe to repeat:
//! 1. decode every message (pure; a bad one becomes a poison outcome);
//! 2. run the pipeline (`hookrelay_platform::pipeline`): ingest every
//!    decodable event in one D1 batch, keyed by idempotency key, then
//!    deliver those that forward, each behind its lease;
//! 3. decide each message's disposition (pure, `hookrelay_core::retry::disposition`);
//! 4. record every failed attempt in one D1 batch (the DLQ worker builds its
//!    envelope from these rows);
//! 5. hand poison messages to `webhooks-dlq` in one send. If that send fails
//!    they are retried instead of acked, so a dead letter is never lost;
//!    then log each failure at WARN;
//! 6. apply each disposition to its own message: nothing here throws, so
//!    the platform never retries the whole batch.

mod enqueue;
mod failures;
mod first_attempt;
mod handoff;
mod process;

pub use enqueue::enqueue;
mod tally;

use crate::config_cache::relay_config;
use hookrelay_core::deliver::breaker::BreakerOpenAction;
use hookrelay_core::metrics::Component;
use hookrelay_core::receive::queued_event::{decode, QueuedEvent};
use hookrelay_core::retry::disposition::{decide, Disposition};
use hookrelay_core::retry::policy::RetrySchedule;
use hookrelay_core::state::error_code::Failure;
use hookrelay_platform::queue_message::QueueMessage;
use hookrelay_platform::{metrics, now_ms};
use worker::Env;

/// The log and metric label of everything the consumer does.
pub const COMPONENT: Component = Component::Consumer;

/// One batch's messages and what each decoded to.
pub struct Batch<'a> {
    /// The queue messages, in order.
    pub messages: &'a [QueueMessage],
    /// Each message's event, or why it is not one.
    pub decoded: &'a [Result<QueuedEvent, Failure>],
}

/// Processes one batch of queue messages.
pub async fn consume(messages: Vec<QueueMessage>, env: &Env) {
    if messages.is_empty() {
        return;
    }
    let now = now_ms();
    let config = relay_config(env);
    let (schedule, delivery, open_action) = match &*config {
        Ok(c) => (
            c.retry.clone(),
            Some((&c.delivery, &c.retry)),
            c.delivery.breaker_open_action,
        ),
        Err(_) => (RetrySchedule::default(), None, BreakerOpenAction::default()),
    };
    let decoded: Vec<Result<QueuedEvent, Failure>> =
        messages.iter().map(|m| decode(&m.body_json)).collect();
    let batch = Batch {
        messages: &messages,
        decoded: &decoded,
    };
    let outcomes = process::process(env, &batch, delivery, now).await;
    let mut dispositions: Vec<Disposition> = outcomes
        .iter()
        .zip(&messages)
        .map(|(o, m)| decide(o.clone(), m.attempts, &schedule, open_action))
        .collect();
    // Attempts are recorded before the hand-off so the DLQ worker, which may
    // pick the hand-off up at once, finds the full history.
    failures::record(env, &batch, &dispositions, now).await;
    handoff::hand_off_poison(env, &batch, &mut dispositions, &schedule, now).await;
    failures::log(&batch, &dispositions);
    let tally = tally::count(&batch, &outcomes, &dispositions);
    // Counters first: once a message is acked its batch may end at any time.
    metrics::flush(env).await;
    apply(&messages, &dispositions);
    tally.log(messages.len());
}

/// The one place a disposition is carried out.
fn apply(messages: &[QueueMessage], dispositions: &[Disposition]) {
    for (message, disposition) in messages.iter().zip(dispositions) {
        match disposition {
            Disposition::Ack | Disposition::DeadLetter { .. } => message.ack(),
            Disposition::Retry { delay_s, .. } => message.retry(*delay_s),
        }
    }
}

/// Why a message did not simply succeed, if it did not.
pub fn failure_of(disposition: &Disposition) -> Option<&Failure> {
    match disposition {
        Disposition::Ack => None,
        Disposition::Retry { failure, .. } | Disposition::DeadLetter { failure } => Some(failure),
    }
}
