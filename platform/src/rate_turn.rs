//! One call's turn at its destination's shared rate (DESIGN §3, "Rates"):
//! a single replay's, or a drain step's. It reserves one start from the
//! destination's `rates` row (one round trip) and waits for it when it is
//! within `max_wait_ms`; a start further off is answered, and the caller
//! answers `429` (a replay) or ends its step (a drain). The consumer
//! reserves a whole batch at once instead (`pipeline::rate`).

use crate::db::rates;
use crate::now_ms;
use crate::outlined::{outlined, Outlined};
use crate::paced::sleep_until;
use hookrelay_core::deliver::rate_slots::{Slot, SlotAsk};
use std::future::Future;
use worker::{D1Database, Result};

/// Takes one start from `destination`'s budget at `rate_per_s`: waits for
/// it and answers `StartAt` when it is within `max_wait_ms`, else answers
/// `Over` with the budget's next free start, having reserved nothing.
/// Outlined: the replay route and the drain step share one body.
pub fn take_turn<'a>(
    db: &'a D1Database,
    destination: &'a str,
    rate_per_s: f64,
    max_wait_ms: i64,
) -> Outlined<impl Future<Output = Result<Slot>> + 'a> {
    outlined(async move {
        let ask = SlotAsk::new(rate_per_s, 1, now_ms(), max_wait_ms);
        let grant = rates::reserve(db, destination, &ask).await?;
        let slot = grant
            .slots(1, ask.spacing_ms)
            .first()
            .copied()
            .unwrap_or(Slot::Over {
                next_free_at_ms: grant.next_at_ms,
            });
        if let Slot::StartAt(at) = slot {
            sleep_until(at).await;
        }
        Ok(slot)
    })
}
