//! Phase 2: take the delivery lease of each event that needs a call.

use super::{Item, Processed};
use crate::db::{error_message, events};
use hookrelay_core::config::DeliveryConfig;
use hookrelay_core::d1_error::classify_d1_error;
use hookrelay_core::disposition::Outcome;
use hookrelay_core::state::{lease_stale_before, DownstreamResult};
use worker::D1Database;

/// Leases `wanted` (indexes into `items`) in one round trip and answers
/// the ones this call holds. An event leased elsewhere is marked so; when
/// D1 refuses, every wanted event fails with the classified error.
pub async fn claim(
    db: &D1Database,
    items: &[Item<'_>],
    wanted: &[usize],
    out: &mut [Processed],
    cfg: &DeliveryConfig,
    now_ms: i64,
) -> Vec<usize> {
    if wanted.is_empty() {
        return Vec::new();
    }
    let ids: Vec<&str> = wanted
        .iter()
        .map(|&i| items[i].event.event_id.as_str())
        .collect();
    let stale_before = lease_stale_before(now_ms, cfg.timeout_ms);
    let claimed = match events::claim(db, &ids, now_ms, stale_before).await {
        Ok(c) => c,
        Err(e) => {
            let failure = classify_d1_error(&error_message(&e));
            for &i in wanted {
                out[i].outcome = Outcome::Failed(failure.clone());
            }
            return Vec::new();
        }
    };
    let mut leased = Vec::new();
    for (&i, held) in wanted.iter().zip(claimed) {
        if held {
            leased.push(i);
        } else {
            out[i].downstream = DownstreamResult::InFlightElsewhere;
        }
    }
    leased
}
