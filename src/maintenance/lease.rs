//! Taking and giving back a maintenance lease (`core::retention::lease`):
//! the glue reads its column of `sweep_state`, lets core decide, and
//! writes the new expiry with a compare-and-set.

use super::over_budget as over;
use hookrelay_core::maintenance::lease::{turn, Lease, LeaseTurn};
use hookrelay_core::metrics::Component;
use hookrelay_core::support::subrequests::Budget;
use hookrelay_platform::db::{error_message, sweep_state};
use hookrelay_platform::log;
use worker::{D1Database, D1PreparedStatement, Env, Result};

/// A lease this run holds, until it gives it back.
pub struct Held {
    lease: Lease,
    until: i64,
}

/// What taking a lease gave this run.
pub enum Turn {
    /// This run holds it, until it gives it back.
    Held(Held),
    /// Another run holds it (until then, when read): this one does nothing.
    Busy(Option<i64>),
}

/// Takes `lease` at `now` (a busy turn is logged); a read and a write,
/// counted in `budget`.
pub async fn take(env: &Env, lease: Lease, now: i64, budget: &mut Budget) -> Result<Turn> {
    let db = env.d1("DB")?;
    budget.spend(1).map_err(over)?;
    let read = sweep_state::lease(&db, lease).await?;
    let held_until = match turn(now, read) {
        LeaseTurn::Take { until } => {
            budget.spend(1).map_err(over)?;
            if sweep_state::take_lease(&db, lease, read, until).await? {
                return Ok(Turn::Held(Held { lease, until }));
            }
            // Another run took it between the read and the write.
            None
        }
        LeaseTurn::Busy { until } => Some(until),
    };
    let (component, event) = match lease {
        Lease::Sweep => (Component::Sweep, "maintenance_busy"),
        Lease::Watchdog => (Component::Watchdog, "watchdog_busy"),
    };
    log::info(
        component,
        event,
        log::fields! {"held_until": held_until, "next": "another run holds the lease; this one leaves it that run's work"},
    );
    Ok(Turn::Busy(held_until))
}

impl Held {
    /// The statement that gives this lease back, to batch with a run's
    /// last writes (then [`release`] is not called).
    pub fn release_statement(&self, db: &D1Database) -> Result<D1PreparedStatement> {
        sweep_state::release_statement(db, self.lease, self.until)
    }
}

/// Gives the lease back. A failure is only logged: the lease then expires
/// by itself (`core::retention::lease::LEASE_MS`).
pub async fn release(env: &Env, held: Held, budget: &mut Budget) {
    let released = match (env.d1("DB"), budget.spend(1)) {
        (Ok(db), Ok(())) => sweep_state::release_lease(&db, held.lease, held.until).await,
        (Err(e), _) => Err(e),
        (_, Err(e)) => Err(over(e)),
    };
    if let Err(e) = released {
        log::error(
            Component::Sweep,
            "lease_release_failed",
            log::fields! {"lease": held.lease.column(), "err": error_message(&e), "next": "the lease expires by itself"},
        );
    }
}
