//! A destination's `rate_per_s`, held across every isolate and path that
//! calls it (DESIGN §3, "Rates"): the consumer, replays, jobs and the
//! drain take their starts from one shared budget, the `rates` row of the
//! destination in D1.
//!
//! The row keeps the earliest time the next start may be. A caller that
//! wants `n` starts reserves them in one atomic statement: its first start
//! is the later of now and that time, its starts are spaced one
//! [`spacing_ms`] apart, and the row moves past the last one. A reservation
//! never reaches past a horizon (`now + max_wait`): a caller only takes the
//! starts it will really wait for, so the budget is never spent on calls
//! that are parked instead (or on a replay that answers `429`).
//!
//! What is decided here: what to ask ([`SlotAsk`]) and what the row
//! answered means for each of the `n` calls ([`Grant::slots`]). The
//! platform runs the statement, which only clamps the span asked to the
//! horizon; the arithmetic of slots is all here.

use crate::deliver::pacing::spacing_ms as fractional_spacing_ms;
use crate::UnixMillis;

/// How long a consumer's call may wait in its invocation for a start it
/// reserved; a call whose start would be later is parked (cause `rate`).
pub const CONSUMER_MAX_WAIT_MS: i64 = 2_000;
/// How long a single replay may wait for its turn before it answers `429`
/// naming the rate ("a few seconds at most").
pub const REPLAY_MAX_WAIT_MS: i64 = 5_000;
/// How long a drain step's call may wait for its turn before the step
/// ends and the next one is scheduled at the budget's next free start.
pub const DRAIN_MAX_WAIT_MS: i64 = 2_000;

/// The gap between two starts from the shared budget at `rate_per_s`, in
/// whole ms, rounded up (a start is never early; 3/s spaces 334 ms).
pub fn spacing_ms(rate_per_s: f64) -> i64 {
    (fractional_spacing_ms(rate_per_s).ceil() as i64).max(1)
}

/// The effective rate of a job or drain run at `own` against a destination
/// whose rate is `destination`: the smaller (DESIGN §3).
pub fn effective_rate(own: f64, destination: Option<f64>) -> f64 {
    destination.map_or(own, |d| d.min(own))
}

/// One reservation to make: the statement's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlotAsk {
    /// Now (the earliest the first start may be).
    pub now_ms: UnixMillis,
    /// The span the starts asked for take: `n × spacing`.
    pub span_ms: i64,
    /// The row may not move past this: a start at or before
    /// `now + max_wait` fits, one spacing after it is the bound.
    pub horizon_ms: UnixMillis,
    /// The spacing of the starts.
    pub spacing_ms: i64,
    /// The destination's `rate_per_s` the starts are spaced by, kept on the
    /// row for the stats (DESIGN §4: each destination's rate).
    pub rate_per_s: f64,
}

impl SlotAsk {
    /// Asks for `wanted` starts at `rate_per_s`, each to begin no later
    /// than `max_wait_ms` after `now_ms`.
    pub fn new(rate_per_s: f64, wanted: u32, now_ms: UnixMillis, max_wait_ms: i64) -> SlotAsk {
        let spacing = spacing_ms(rate_per_s);
        SlotAsk {
            now_ms,
            span_ms: i64::from(wanted) * spacing,
            horizon_ms: now_ms + max_wait_ms.max(0) + spacing,
            spacing_ms: spacing,
            rate_per_s,
        }
    }

    /// What the atomic statement does to a row whose next free start is
    /// `next_at_ms` (`None`: no row yet): the grant it answers. The SQL
    /// (`platform::db::rates`) is this, and this is its table-tested model.
    pub fn apply(&self, next_at_ms: Option<UnixMillis>) -> Grant {
        let first = next_at_ms.map_or(self.now_ms, |n| n.max(self.now_ms));
        // Whole spacings only (integer division truncates toward zero, in
        // SQLite as here): a part of one would move the row for no start.
        let fits = (self.horizon_ms - first) / self.spacing_ms * self.spacing_ms;
        let span = self.span_ms.min(fits).max(0);
        Grant {
            first_at_ms: first,
            next_at_ms: first + span,
        }
    }
}

/// What a reservation answered: the first start it may take, and where
/// the row now stands (the next free start after it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// The first start of the grant.
    pub first_at_ms: UnixMillis,
    /// The row's next free start after the grant.
    pub next_at_ms: UnixMillis,
}

/// What one of the calls asked for may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// Start at this time (wait until then; it is within the max wait).
    StartAt(UnixMillis),
    /// Over the rate: no start fits within the wait. The consumer parks it
    /// (cause `rate`), a replay answers `429`, a drain step ends; the
    /// budget's next free start is `next_free_at_ms`.
    Over {
        /// When the budget next has a free start.
        next_free_at_ms: UnixMillis,
    },
}

impl Grant {
    /// How many starts the grant holds at `spacing_ms`.
    pub fn count(&self, spacing_ms: i64) -> u32 {
        let n = (self.next_at_ms - self.first_at_ms).max(0) / spacing_ms.max(1);
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// The slot of each of `wanted` calls, in order: the first ones start
    /// at the grant's starts, spaced `spacing_ms`; the rest are over.
    pub fn slots(&self, wanted: u32, spacing_ms: i64) -> Vec<Slot> {
        let granted = self.count(spacing_ms).min(wanted);
        (0..wanted)
            .map(|i| {
                if i < granted {
                    Slot::StartAt(self.first_at_ms + i64::from(i) * spacing_ms)
                } else {
                    Slot::Over {
                        next_free_at_ms: self.next_at_ms,
                    }
                }
            })
            .collect()
    }
}

/// The words of a refusal over the rate: names the destination, its rate
/// and when the next start is free.
pub fn over_rate_message(
    destination: &str,
    rate_per_s: f64,
    next_free_at_ms: UnixMillis,
    now_ms: UnixMillis,
) -> String {
    let wait_s = (next_free_at_ms - now_ms).max(0).div_euclid(1000) + 1;
    format!(
        "destination '{destination}' is over its rate_per_s of {rate_per_s} calls per second; its next start is free in about {wait_s} s: try again then"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spacing_rounds_up_to_whole_ms() {
        let table = [
            (2.0, 500),
            (3.0, 334),
            (10.0, 100),
            (0.1, 10_000),
            (100.0, 10),
        ];
        for (rate, want) in table {
            assert_eq!(spacing_ms(rate), want, "{rate}/s");
        }
    }

    #[test]
    fn the_effective_rate_is_the_smaller() {
        let table = [
            (10.0, Some(2.0), 2.0),
            (1.0, Some(2.0), 1.0),
            (4.0, None, 4.0),
        ];
        for (own, dest, want) in table {
            assert_eq!(effective_rate(own, dest), want, "{own} {dest:?}");
        }
    }

    /// (row's next free start, wanted, now, max wait) at 2/s → the starts
    /// each call gets (`None`: over) and where the row stands after.
    #[test]
    fn a_reservation_takes_only_the_starts_within_the_wait() {
        type Case = (Option<i64>, u32, i64, i64, &'static [Option<i64>], i64);
        let table: [Case; 9] = [
            // A fresh row: starts from now, spaced 500 ms.
            (
                None,
                3,
                1_000,
                2_000,
                &[Some(1_000), Some(1_500), Some(2_000)],
                2_500,
            ),
            // A row in the past starts from now too.
            (Some(0), 2, 1_000, 2_000, &[Some(1_000), Some(1_500)], 2_000),
            // Twenty wanted, two seconds of wait: five fit (0 to 2 s), the
            // rest are over and the row stops at the horizon.
            (
                Some(0),
                8,
                0,
                2_000,
                &[
                    Some(0),
                    Some(500),
                    Some(1_000),
                    Some(1_500),
                    Some(2_000),
                    None,
                    None,
                    None,
                ],
                2_500,
            ),
            // Another isolate reserved up to 1.2 s: this one starts there.
            (Some(1_200), 2, 0, 2_000, &[Some(1_200), Some(1_700)], 2_200),
            // The row is beyond the wait: nothing fits, the row is unmoved.
            (Some(3_000), 2, 0, 2_000, &[None, None], 3_000),
            // Exactly at the last start that fits.
            (Some(2_000), 2, 0, 2_000, &[Some(2_000), None], 2_500),
            // No wait at all: only a start free right now.
            (Some(0), 2, 100, 0, &[Some(100), None], 600),
            // Part of a spacing fits no start and moves nothing.
            (Some(101), 1, 100, 0, &[None], 101),
            (Some(2_100), 3, 0, 2_000, &[None, None, None], 2_100),
        ];
        for (row, wanted, now, wait, want, row_after) in table {
            let ask = SlotAsk::new(2.0, wanted, now, wait);
            let grant = ask.apply(row);
            let got: Vec<Option<i64>> = grant
                .slots(wanted, ask.spacing_ms)
                .into_iter()
                .map(|s| match s {
                    Slot::StartAt(at) => Some(at),
                    Slot::Over { next_free_at_ms } => {
                        assert_eq!(next_free_at_ms, grant.next_at_ms);
                        None
                    }
                })
                .collect();
            assert_eq!(
                got, want,
                "row {row:?} wanted {wanted} now {now} wait {wait}"
            );
            assert_eq!(grant.next_at_ms, row_after, "row after, {row:?} {wanted}");
        }
    }

    /// Many isolates reserving from one row, at any pattern of asks, never
    /// start more than ceil(rate × W) + 1 calls in a window of W seconds.
    #[test]
    fn reservations_from_many_callers_never_burst() {
        for rate in [0.5, 2.0, 3.0, 10.0, 100.0] {
            for (wanted, step_ms) in [(1, 0), (5, 37), (20, 250), (3, 1_000)] {
                let mut row = None;
                let mut starts = Vec::new();
                for k in 0..40i64 {
                    let ask = SlotAsk::new(rate, wanted, k * step_ms, CONSUMER_MAX_WAIT_MS);
                    let grant = ask.apply(row);
                    row = Some(grant.next_at_ms);
                    for s in grant.slots(wanted, ask.spacing_ms) {
                        if let Slot::StartAt(at) = s {
                            assert!(at <= k * step_ms + CONSUMER_MAX_WAIT_MS, "waits too long");
                            starts.push(at);
                        }
                    }
                }
                starts.sort_unstable();
                for w_s in [1, 2, 5] {
                    let cap = (rate * w_s as f64).ceil() as usize + 1;
                    for (i, s) in starts.iter().enumerate() {
                        let n = starts[i..]
                            .iter()
                            .take_while(|t| **t < s + w_s * 1_000)
                            .count();
                        assert!(n <= cap, "{rate}/s: {n} starts in {w_s} s from {s}");
                    }
                }
            }
        }
    }

    #[test]
    fn the_refusal_names_the_destination_the_rate_and_the_wait() {
        let m = over_rate_message("billing", 2.0, 4_200, 1_000);
        assert!(
            m.contains("'billing'") && m.contains("rate_per_s of 2") && m.contains("4 s"),
            "{m}"
        );
    }
}
