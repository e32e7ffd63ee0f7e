//! Step 2: run the pipeline over every decodable event of the batch.

use super::{Batch, COMPONENT};
use hookrelay_core::config::DeliveryConfig;
use hookrelay_core::disposition::Outcome;
use hookrelay_core::error_code::{ErrorCode, Failure};
use hookrelay_platform::db::error_message;
use hookrelay_platform::pipeline::{self, Item};
use worker::Env;

/// The `CONTROL` queue that carries drain steps; without it a park still
/// happens, and the resume check sends the drain's first step later.
fn control(env: &Env) -> Option<worker::Queue> {
    env.queue("CONTROL").ok()
}

/// Each message's outcome. Undecodable messages keep their poison failure.
/// Without a valid configuration nothing is attempted, and every message is
/// retried until the configuration is fixed.
pub async fn process(
    env: &Env,
    batch: &Batch<'_>,
    delivery: Option<&DeliveryConfig>,
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
    let Some(delivery) = delivery else {
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
    let results: Vec<Outcome> = match env.d1("DB") {
        Ok(db) => {
            pipeline::run_parking(&db, &items, delivery, COMPONENT, now, control(env).as_ref())
                .await
                .into_iter()
                .map(|p| p.outcome)
                .collect()
        }
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
