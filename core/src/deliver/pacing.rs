//! What a rate means, everywhere it appears (DESIGN.md §4): replay-all,
//! jobs and the drain of parked events.
//!
//! A rate caps how many calls *start* in any one-second window: starts are
//! spaced about `1/rate` apart, never sent as a burst. Concurrency is a
//! separate cap, on how many calls are in flight at once; it never lets
//! starts bunch up. So a job at 4/s over 13 entries takes about 3 s,
//! whatever its concurrency.
//!
//! [`Pacer`] hands out start times. Each start is spaced from the previous
//! *start it handed out*, not from an anchor alone, so a call that waited
//! for a free slot (concurrency) never lets the next ones catch up in a
//! burst.

use crate::UnixMillis;

/// The lowest rate accepted, in calls per second.
pub const MIN_RATE_PER_S: f64 = 0.1;
/// The highest rate accepted, in calls per second.
pub const MAX_RATE_PER_S: f64 = 100.0;
/// What a refused `rate_per_s` is told.
pub const RATE_RANGE: &str = "must be a number from 0.1 to 100 (calls started per second)";

/// Whether `rate_per_s` is in the accepted range; the error is [`RATE_RANGE`].
pub fn check_rate(rate_per_s: f64) -> Result<f64, &'static str> {
    if (MIN_RATE_PER_S..=MAX_RATE_PER_S).contains(&rate_per_s) {
        Ok(rate_per_s)
    } else {
        Err(RATE_RANGE)
    }
}

/// The gap between two starts at `rate_per_s`, in ms (fractional, so that
/// 3/s spaces 333.3 ms and never drifts over many calls).
pub fn spacing_ms(rate_per_s: f64) -> f64 {
    1000.0 / rate_per_s
}

/// When a rated call may really start: its reserved start, moved later if
/// its destination's previous call in this invocation started less than a
/// spacing before (a reserved start that passed while the call waited for
/// its turn is moved, never sent together with the next: the receiver
/// never sees a burst).
pub fn paced_start(reserved_ms: i64, previous_start_ms: Option<i64>, rate_per_s: f64) -> i64 {
    match previous_start_ms {
        Some(prev) => reserved_ms.max(prev + spacing_ms(rate_per_s).ceil() as i64),
        None => reserved_ms,
    }
}

/// How many calls fit in `window_ms` at `rate_per_s`, at least one: how a
/// bounded slice (a replay-all call, a job step) is sized to its rate.
pub fn calls_within(window_ms: i64, rate_per_s: f64) -> u32 {
    ((window_ms as f64) / spacing_ms(rate_per_s))
        .floor()
        .max(1.0) as u32
}

/// Hands out start times: the first at the anchor (or now, if later), each
/// next one at least one spacing after the previous one handed out.
#[derive(Debug, Clone, PartialEq)]
pub struct Pacer {
    /// ms between two starts; 0 when unpaced.
    spacing_ms: f64,
    /// The earliest the next start may be.
    next_at_ms: f64,
}

impl Pacer {
    /// A pacer at `rate_per_s` (unpaced when `None`) whose first start may
    /// be at `anchor_ms`.
    pub fn new(rate_per_s: Option<f64>, anchor_ms: UnixMillis) -> Self {
        Pacer {
            spacing_ms: rate_per_s.map_or(0.0, spacing_ms),
            next_at_ms: anchor_ms as f64,
        }
    }

    /// Reserves the next start for a call that is ready at `now_ms`: the
    /// later of now and the earliest allowed. The call must not start
    /// before the time answered.
    pub fn reserve(&mut self, now_ms: UnixMillis) -> UnixMillis {
        let at = self.next_at_ms.max(now_ms as f64);
        self.next_at_ms = at + self.spacing_ms;
        at.ceil() as UnixMillis
    }

    /// Holds the next start until at least `at_ms` (a destination's
    /// shared rate said its next start is not free before then).
    pub fn hold_until(&mut self, at_ms: UnixMillis) {
        self.next_at_ms = self.next_at_ms.max(at_ms as f64);
    }

    /// The earliest the call after the last reserved one may start: when
    /// the next slice of the same run is due.
    pub fn next_at_ms(&self) -> UnixMillis {
        self.next_at_ms.ceil() as UnixMillis
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_that_passed_while_waiting_is_moved_a_spacing_after_the_previous() {
        let table = [
            // (reserved, previous actual start, rate) → start
            ((1_000, None, 4.0), 1_000),
            ((1_000, Some(900), 4.0), 1_150),
            ((1_000, Some(500), 4.0), 1_000),
            ((0, Some(5_000), 0.5), 7_000),
        ];
        for ((reserved, prev, rate), want) in table {
            assert_eq!(
                paced_start(reserved, prev, rate),
                want,
                "{reserved} {prev:?} {rate}"
            );
        }
    }

    #[test]
    fn rates_outside_a_tenth_to_a_hundred_are_refused() {
        let table = [
            (0.1, true),
            (4.0, true),
            (100.0, true),
            (0.05, false),
            (0.0, false),
            (-1.0, false),
            (100.5, false),
            (f64::NAN, false),
            (f64::INFINITY, false),
        ];
        for (rate, ok) in table {
            assert_eq!(check_rate(rate).is_ok(), ok, "{rate}");
        }
    }

    #[test]
    fn calls_within_a_window_follow_the_rate_and_are_at_least_one() {
        let table = [
            (20_000, 0.1, 2),
            (20_000, 4.0, 80),
            (20_000, 100.0, 2_000),
            (2_000, 0.1, 1),
            (2_000, 10.0, 20),
            (0, 10.0, 1),
        ];
        for (window, rate, want) in table {
            assert_eq!(calls_within(window, rate), want, "{window} ms at {rate}/s");
        }
    }

    #[test]
    fn starts_are_spaced_from_the_anchor_when_calls_are_ready_early() {
        let mut p = Pacer::new(Some(4.0), 1_000);
        let starts: Vec<i64> = (0..5).map(|_| p.reserve(0)).collect();
        assert_eq!(starts, vec![1_000, 1_250, 1_500, 1_750, 2_000]);
        assert_eq!(p.next_at_ms(), 2_250);
    }

    #[test]
    fn fractional_spacing_does_not_drift() {
        let mut p = Pacer::new(Some(3.0), 0);
        let last = (0..301).map(|_| p.reserve(0)).last();
        assert_eq!(last, Some(100_000), "300 gaps of 1/3 s are 100 s exactly");
    }

    #[test]
    fn a_late_call_starts_now_and_the_next_is_spaced_from_it_not_from_the_anchor() {
        let mut p = Pacer::new(Some(2.0), 0);
        assert_eq!(p.reserve(0), 0);
        // Waited for a free slot until 5 s: it starts at once...
        assert_eq!(p.reserve(5_000), 5_000);
        // ...and the one ready at the same moment waits its spacing.
        assert_eq!(p.reserve(5_000), 5_500);
    }

    #[test]
    fn a_hold_only_ever_delays_the_next_start() {
        let mut p = Pacer::new(Some(2.0), 0);
        p.reserve(0);
        p.hold_until(3_000);
        assert_eq!(p.next_at_ms(), 3_000);
        p.hold_until(1_000);
        assert_eq!(p.next_at_ms(), 3_000, "an earlier hold changes nothing");
        assert_eq!(p.reserve(0), 3_000);
    }

    #[test]
    fn unpaced_starts_are_immediate() {
        let mut p = Pacer::new(None, 0);
        assert_eq!(p.reserve(7), 7);
        assert_eq!(p.reserve(7), 7);
        assert_eq!(p.next_at_ms(), 7);
    }

    /// The property the integration tests check from outside: no half-open
    /// one-second window holds more than ceil(rate) + 1 starts, and n
    /// starts span (n - 1) / rate, whatever the readiness pattern.
    #[test]
    fn no_one_second_window_holds_more_than_the_rate_allows() {
        for rate in [0.1, 0.5, 1.0, 2.5, 3.0, 4.0, 10.0, 33.0, 100.0] {
            for ready_every_ms in [0, 7, 300, 1_100] {
                let mut p = Pacer::new(Some(rate), 0);
                let n = 40;
                let starts: Vec<i64> = (0..n).map(|i| p.reserve(i * ready_every_ms)).collect();
                let cap = rate.ceil() as usize + 1;
                for (i, s) in starts.iter().enumerate() {
                    let in_window = starts[i..].iter().take_while(|t| **t < s + 1_000).count();
                    assert!(in_window <= cap, "{rate}/s: {in_window} starts from {s}");
                }
                let span = (starts[starts.len() - 1] - starts[0]) as f64;
                assert!(
                    span >= (n - 1) as f64 / rate * 1000.0 - 1.0,
                    "{rate}/s span {span}"
                );
            }
        }
    }
}
