//! Taking and giving back the maintenance lease (`core::retention::lease`):
//! the glue reads `sweep_state.lease_until`, lets core decide, and writes
//! the new expiry with a compare-and-set.

use hookrelay_core::metrics::Component;
use hookrelay_core::retention::lease::{turn, LeaseTurn};
use hookrelay_platform::db::{error_message, sweep_state};
use hookrelay_platform::log;
use worker::{Env, Result};

/// The lease this run holds, until it gives it back.
pub struct Held {
    until: i64,
}

/// What taking the lease gave this run.
pub enum Turn {
    /// This run holds it, until it gives it back.
    Held(Held),
    /// Another run holds it (until then, when read): this one does nothing.
    Busy(Option<i64>),
}

/// Takes the lease at `now` (a busy turn is logged).
pub async fn take(env: &Env, now: i64) -> Result<Turn> {
    let db = env.d1("DB")?;
    let read = sweep_state::lease(&db).await?;
    let held_until = match turn(now, read) {
        LeaseTurn::Take { until } => {
            if sweep_state::take_lease(&db, read, until).await? {
                return Ok(Turn::Held(Held { until }));
            }
            // Another run took it between the read and the write.
            None
        }
        LeaseTurn::Busy { until } => Some(until),
    };
    log::info(
        Component::Sweep,
        "maintenance_busy",
        log::fields! {"held_until": held_until, "next": "another run holds the lease; this one does nothing"},
    );
    Ok(Turn::Busy(held_until))
}

/// Gives the lease back. A failure is only logged: the lease then expires
/// by itself (`core::retention::lease::LEASE_MS`).
pub async fn release(env: &Env, held: Held) {
    let released = match env.d1("DB") {
        Ok(db) => sweep_state::release_lease(&db, held.until).await,
        Err(e) => Err(e),
    };
    if let Err(e) = released {
        log::error(
            Component::Sweep,
            "lease_release_failed",
            log::fields! {"err": error_message(&e), "next": "the lease expires by itself"},
        );
    }
}
