//! Step 2: ingest every decodable event of the batch, routed
//! (`hookrelay_platform::pipeline::ingest`), then make each new delivery's
//! first attempt (`super::first_attempt`), which sends on to the
//! `deliveries` queue only what it did not settle. A redelivered or
//! duplicate message takes up only the deliveries that are pending with no
//! message outstanding (`deliveries::to_send`): one waiting out its backoff
//! keeps its own message and its count. If a send fails, the deliveries
//! are marked unsent and the events' messages are retried.
//! (`super::enqueue` sends every delivery's message instead: with
//! `FIRST_ATTEMPT_BUDGET=0s`, and for a replay's re-ingest.)

use super::first_attempt::first_attempts;
use super::{Batch, COMPONENT};
use hookrelay_core::deliver::DeliveryConfig;
use hookrelay_core::retry::disposition::Outcome;
use hookrelay_core::retry::policy::RetrySchedule;
use hookrelay_core::state::error_code::{ErrorCode, Failure};
use hookrelay_platform::db::error_message;
use hookrelay_platform::pipeline::{self, Item};
use worker::Env;

/// Each message's outcome. Undecodable messages keep their poison failure.
/// Without a valid configuration nothing is attempted, and every message is
/// retried until the configuration is fixed.
pub async fn process(
    env: &Env,
    batch: &Batch<'_>,
    delivery: Option<(&DeliveryConfig, &RetrySchedule)>,
    now: i64,
) -> Vec<Outcome> {
    let mut outcomes: Vec<Outcome> = batch
        .decoded
        .iter()
        .map(|r| match r {
            Ok(_) => Outcome::Failed(Failure::new(
                ErrorCode::Unknown,
                "the relay configuration is invalid; see the config_invalid log line",
            )),
            Err(f) => Outcome::Failed(f.clone()),
        })
        .collect();
    let Some((delivery, retry)) = delivery else {
        return outcomes;
    };
    let (indexes, items): (Vec<usize>, Vec<Item>) = batch
        .decoded
        .iter()
        .zip(batch.messages)
        .enumerate()
        .filter_map(|(i, (r, m))| {
            r.as_ref().ok().map(|event| {
                let item = Item {
                    event,
                    queue_message_id: m.id.as_str(),
                };
                (i, item)
            })
        })
        .unzip();
    if items.is_empty() {
        return outcomes;
    }
    let results = ingest_and_attempt(env, (delivery, retry), &items, now).await;
    for (i, outcome) in indexes.into_iter().zip(results) {
        outcomes[i] = outcome;
    }
    outcomes
}

/// Ingests the items (the `CONTROL` queue carrying the first step of a
/// drain that a legacy parked event's copy started), then makes their
/// deliveries' first attempts: each item's outcome (a failed send fails
/// every item, so nothing is acked before its deliveries are on their way).
async fn ingest_and_attempt(
    env: &Env,
    (delivery, retry): (&DeliveryConfig, &RetrySchedule),
    items: &[Item<'_>],
    now: i64,
) -> Vec<Outcome> {
    let db = match env.d1("DB") {
        Ok(db) => db,
        Err(e) => {
            let failure = Failure::new(
                ErrorCode::D1Unavailable,
                format!("D1 binding DB: {}", error_message(&e)),
            );
            return vec![Outcome::Failed(failure); items.len()];
        }
    };
    let control = env.queue("CONTROL").ok();
    let (processed, pending) =
        pipeline::ingest(&db, items, delivery, (COMPONENT, control.as_ref()), now).await;
    let mut results: Vec<Outcome> = processed.into_iter().map(|p| p.outcome).collect();
    let attempted = first_attempts((env, &db), (delivery, retry), items, pending, now);
    if let Err(f) = attempted.await {
        // Nothing is acked before its deliveries are on the queue.
        for r in results.iter_mut() {
            if !matches!(r, Outcome::Failed(_)) {
                *r = Outcome::Failed(f.clone());
            }
        }
    }
    results
}
