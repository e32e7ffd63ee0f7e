//! The maintenance lease: one sweep step (and, with a cron or a
//! `maintenance/run`, the watchdog after it) at a time.
//!
//! A cron, a `maintenance/run` and a continuation message can start at the
//! same moment. Two sweep steps at once would read the same candidates with
//! different `now`s, chunk them differently, and archive an event under two
//! keys; two watchdogs would each open an episode of the same alarm. So a
//! run first takes the lease, one row in D1 (`sweep_state.lease_until`):
//! the glue reads it, asks [`turn`], and writes the new expiry only if the
//! row still holds what it read (a compare-and-set), so of two runs that
//! read the same lease one wins. The loser does nothing: `maintenance/run`
//! answers `"more": true` (run again), a cron or a continuation stops (the
//! holder continues its own chain, or the next cron does).
//!
//! The lease expires by itself, so a run that died holding it blocks the
//! others for at most [`LEASE_MS`]; the holder gives it back when it ends.

use crate::UnixMillis;

/// How long a lease holds: longer than a sweep step (40 subrequests) plus
/// the watchdog's alerts (10 POSTs, each within `DELIVERY_TIMEOUT_MS`), and
/// shorter than the 5-minute cron, so a dead holder costs one run at most.
pub const LEASE_MS: i64 = 180_000;

/// What a run does about the lease it read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseTurn {
    /// Take it: write `until` if the row still holds what was read.
    Take {
        /// The new expiry; also the holder's token (no other run can
        /// write the same one while this one holds it).
        until: UnixMillis,
    },
    /// Another run holds it until then: do nothing now.
    Busy {
        /// When it expires.
        until: UnixMillis,
    },
}

/// The turn at `now` of a run that read `held_until` (`None`: free). An
/// expiry further away than [`LEASE_MS`] cannot have been written by a
/// holder with a sane clock, so it is taken rather than trusted: a bad
/// value never blocks the sweep for longer than one lease.
pub fn turn(now: UnixMillis, held_until: Option<UnixMillis>) -> LeaseTurn {
    match held_until {
        Some(until) if until > now && until - now <= LEASE_MS => LeaseTurn::Busy { until },
        _ => LeaseTurn::Take {
            until: now + LEASE_MS,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_free_or_expired_lease_is_taken_and_a_held_one_is_not() {
        let now = 1_000_000;
        let take = LeaseTurn::Take {
            until: now + LEASE_MS,
        };
        let table: [(&str, Option<UnixMillis>, LeaseTurn); 6] = [
            ("never taken", None, take),
            ("expired long ago", Some(now - LEASE_MS), take),
            ("expires right now", Some(now), take),
            (
                "held a moment more",
                Some(now + 1),
                LeaseTurn::Busy { until: now + 1 },
            ),
            (
                "just taken by another run",
                Some(now + LEASE_MS),
                LeaseTurn::Busy {
                    until: now + LEASE_MS,
                },
            ),
            ("further away than a lease", Some(now + LEASE_MS + 1), take),
        ];
        for (case, held, want) in table {
            assert_eq!(turn(now, held), want, "{case}");
        }
    }

    #[test]
    fn a_taken_lease_never_equals_the_one_it_replaces() {
        // The expiry is the holder's token: the holder gives back only its own.
        for held in [None, Some(0), Some(999_999)] {
            let LeaseTurn::Take { until } = turn(1_000_000, held) else {
                panic!("{held:?} is free");
            };
            assert_ne!(Some(until), held);
        }
    }
}
