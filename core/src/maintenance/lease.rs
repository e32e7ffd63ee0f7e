//! The maintenance leases: one sweep step at a time, and one watchdog at a
//! time, each under its own lease so neither waits for the other.
//!
//! A cron, a `maintenance/run` and a continuation message can start at the
//! same moment. Two sweep steps at once would read the same candidates with
//! different `now`s, chunk them differently, and archive an event under two
//! keys; two watchdogs would each open an episode of the same alarm. So a
//! sweep step first takes [`Lease::Sweep`] and a watchdog [`Lease::Watchdog`],
//! each one column of the one `sweep_state` row: the glue reads it, asks
//! [`turn`], and writes the new expiry only if the column still holds what
//! it read (a compare-and-set), so of two runs that read the same lease one
//! wins. The loser does nothing: a sweep step answers `"more": true` (run
//! again) or stops; a watchdog leaves this run to the one that holds it.
//! The watchdog's own lease is why a long sweep backlog, whose
//! continuations hold the sweep's lease almost all the time, never stops
//! the alarms.
//!
//! **Clocks.** The expiry is written by one isolate's clock and read by
//! another's, and the two may differ by up to [`MAX_CLOCK_SKEW_MS`]. An
//! expiry up to [`LEASE_MS`] plus that skew away is a holder's; only one
//! further away (a clock far off, a hand-edited row) is taken rather than
//! trusted, so a bad value never blocks the sweep for longer than one
//! lease. An expiry counts as past only once it is that skew behind, so a
//! run whose clock is ahead never takes a lease its holder still holds.
//!
//! The lease expires by itself, so a run that died holding it blocks the
//! others for at most [`LEASE_MS`] plus the skew; the holder gives it back
//! when it ends.

use crate::UnixMillis;

/// How long a lease holds: longer than a sweep step (its subrequests) and
/// than a watchdog run (its D1 calls and one round of alerts sent side by
/// side, each within `ALERT_TIMEOUT`, at most
/// [`crate::alarms::settings::MAX_ALERT_TIMEOUT_MS`]), and
/// shorter than the 5-minute cron with the skew added, so a dead holder
/// costs one run at most.
pub const LEASE_MS: i64 = 180_000;

/// The most two isolates' clocks are taken to differ by.
pub const MAX_CLOCK_SKEW_MS: i64 = 30_000;

// A watchdog at its slowest (one round of alerts side by side, then the
// cannot-store alert, each at the longest ALERT_TIMEOUT, and a minute for
// D1) fits its lease, and a dead holder costs one */5 cron at most.
const _: () = assert!(2 * crate::alarms::settings::MAX_ALERT_TIMEOUT_MS + 60_000 <= LEASE_MS);
const _: () = assert!(LEASE_MS + MAX_CLOCK_SKEW_MS < 300_000);

/// The two leases, each its own column of `sweep_state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lease {
    /// One sweep step at a time (`lease_until`).
    Sweep,
    /// One watchdog run at a time (`watch_lease_until`).
    Watchdog,
}

impl Lease {
    /// The `sweep_state` column that holds its expiry.
    pub fn column(self) -> &'static str {
        match self {
            Lease::Sweep => "lease_until",
            Lease::Watchdog => "watch_lease_until",
        }
    }
}

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

/// The turn at `now` of a run that read `held_until` (`None`: free).
pub fn turn(now: UnixMillis, held_until: Option<UnixMillis>) -> LeaseTurn {
    let take = LeaseTurn::Take {
        until: now + LEASE_MS,
    };
    match held_until {
        None => take,
        // Past even for a clock that is the whole skew ahead of the holder's.
        Some(until) if until + MAX_CLOCK_SKEW_MS <= now => take,
        // Further away than any holder could have written.
        Some(until) if until - now > LEASE_MS + MAX_CLOCK_SKEW_MS => take,
        Some(until) => LeaseTurn::Busy { until },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_free_expired_or_absurd_lease_is_taken_and_a_holders_is_not_whatever_the_skew() {
        let now = 1_000_000;
        let take = LeaseTurn::Take {
            until: now + LEASE_MS,
        };
        let busy = |until| LeaseTurn::Busy { until };
        let skew = MAX_CLOCK_SKEW_MS;
        let table: [(&str, Option<UnixMillis>, LeaseTurn); 11] = [
            ("never taken", None, take),
            ("expired long ago", Some(now - LEASE_MS), take),
            ("expired the whole skew ago", Some(now - skew), take),
            (
                "expired by this clock, but this clock may be ahead",
                Some(now - skew + 1),
                busy(now - skew + 1),
            ),
            ("expires right now", Some(now), busy(now)),
            ("held a moment more", Some(now + 1), busy(now + 1)),
            (
                "just taken by a run with the same clock",
                Some(now + LEASE_MS),
                busy(now + LEASE_MS),
            ),
            (
                "just taken by a run whose clock is 1 ms ahead",
                Some(now + LEASE_MS + 1),
                busy(now + LEASE_MS + 1),
            ),
            (
                "just taken by a run whose clock is the whole skew ahead",
                Some(now + LEASE_MS + skew),
                busy(now + LEASE_MS + skew),
            ),
            (
                "further away than any holder could write",
                Some(now + LEASE_MS + skew + 1),
                take,
            ),
            ("absurdly far away", Some(i64::MAX / 2), take),
        ];
        for (case, held, want) in table {
            assert_eq!(turn(now, held), want, "{case}");
        }
    }

    #[test]
    fn a_run_whose_clock_is_behind_never_takes_a_fresh_lease() {
        // A took the lease at its `t`; B reads it at once with a clock
        // `lag` behind (B's now = t - lag) or ahead (t + lag).
        let t = 5_000_000;
        let written = t + LEASE_MS;
        for lag in [0, 1, 1_000, MAX_CLOCK_SKEW_MS] {
            for b_now in [t - lag, t + lag] {
                assert!(
                    matches!(turn(b_now, Some(written)), LeaseTurn::Busy { .. }),
                    "B at {b_now} (A at {t}) took A's fresh lease"
                );
            }
        }
    }

    #[test]
    fn a_taken_lease_never_equals_the_one_it_replaces() {
        // The expiry is the holder's token: the holder gives back only its own.
        for held in [None, Some(0), Some(999_999 - MAX_CLOCK_SKEW_MS)] {
            let LeaseTurn::Take { until } = turn(1_000_000, held) else {
                panic!("{held:?} is free");
            };
            assert_ne!(Some(until), held);
        }
    }

    #[test]
    fn the_two_leases_are_two_columns() {
        assert_ne!(Lease::Sweep.column(), Lease::Watchdog.column());
    }
}
