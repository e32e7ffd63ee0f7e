//! Phase 2: take the delivery lease of each event that needs a call; in
//! the common path the ingest batch took it already (`super::ahead`), and
//! this only reads which listings hold it.

use super::{Item, Processed};
use crate::db::{error_message, events};
use crate::log;
use hookrelay_core::config::DeliveryConfig;
use hookrelay_core::d1_error::classify_d1_error;
use hookrelay_core::delivery_plan::{claimable, lease_holders};
use hookrelay_core::disposition::Outcome;
use hookrelay_core::metrics::Component;
use hookrelay_core::parking::Caller;
use hookrelay_core::state::{lease_stale_before, DownstreamResult};
use worker::D1Database;

/// Leases `wanted` (indexes into `items`) in one round trip and answers
/// the ones this call holds, as [`held`] does.
pub async fn claim(
    db: &D1Database,
    items: &[Item<'_>],
    wanted: &[usize],
    out: &mut [Processed],
    (cfg, caller, component): (&DeliveryConfig, Caller, Component),
    now_ms: i64,
) -> Vec<usize> {
    if wanted.is_empty() {
        return Vec::new();
    }
    let ids = ids(items, wanted);
    let stale_before = lease_stale_before(now_ms, cfg.timeout_ms);
    let leased = events::claim(db, &ids, claimable(caller), now_ms, stale_before).await;
    held(items, wanted, out, leased, component)
}

/// Which of `wanted` hold a lease, from the ids a claim `leased`. An event
/// leased elsewhere is marked so; when D1 refused (or its answer cannot be
/// read), every wanted event fails with the classified error and any lease
/// taken expires on its own.
pub fn held(
    items: &[Item<'_>],
    wanted: &[usize],
    out: &mut [Processed],
    leased: worker::Result<Vec<String>>,
    component: Component,
) -> Vec<usize> {
    let leased = match leased {
        Ok(l) => l,
        Err(e) => {
            let failure = classify_d1_error(&error_message(&e));
            for &i in wanted {
                out[i].outcome = Outcome::Failed(failure.clone());
            }
            return Vec::new();
        }
    };
    let (holds, strays) = lease_holders(&ids(items, wanted), leased);
    if strays > 0 {
        // Only an event whose ingest row went missing can get here; its
        // lease expires, and its retry finds it free.
        log::error(component, "lease_unmatched", log::fields! {"count": strays});
    }
    let mut holding = Vec::new();
    for (&i, holds) in wanted.iter().zip(holds) {
        if holds {
            holding.push(i);
        } else {
            out[i].downstream = DownstreamResult::InFlightElsewhere;
        }
    }
    holding
}

fn ids<'a>(items: &[Item<'a>], wanted: &[usize]) -> Vec<&'a str> {
    wanted
        .iter()
        .map(|&i| items[i].event.event_id.as_str())
        .collect()
}
