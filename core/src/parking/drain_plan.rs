//! A drain's pacing and its reaction to each result, as plain arithmetic.
//!
//! A drain delivers one destination's parked events oldest first, in steps
//! driven by queue messages. A step makes at most [`StepPlan::max_events`]
//! calls with their starts spaced [`StepPlan::spacing_ms`] apart, then
//! enqueues the next step so that it starts no earlier than one spacing
//! after this step's last call: the mean rate never exceeds
//! `DRAIN_RATE_PER_S`. A step never loops over the whole backlog.

use crate::deliver::response::{counts_against_breaker, parks_destination};
use crate::state::error_code::{Failure, FailureClass};
use crate::UnixMillis;

/// Most calls in one step, so a step stays well inside an invocation's
/// limits (subrequests, wall time) whatever the rate.
pub const MAX_EVENTS_PER_STEP: u32 = 20;

/// How often one isolate looks for drains whose chain of messages was lost
/// (local queues live in memory; a restart of `npm start` drops them).
pub const RESUME_EVERY_MS: i64 = 30_000;

/// How far past its due time a step must be before its chain counts as
/// lost and is resent with a new generation.
pub const STALE_AFTER_MS: i64 = 60_000;

/// Seconds before a step that stopped for a reason other than the
/// destination (D1 unavailable, a body that cannot be loaded) is tried again.
pub const STOPPED_RETRY_S: u32 = 5;

/// How one step is paced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepPlan {
    /// Calls in one step.
    pub max_events: u32,
    /// Milliseconds between two call starts (rounded up, so never faster).
    pub spacing_ms: i64,
    /// For a rate below one per second: the fixed `delaySeconds` of the next step.
    pub slow_delay_s: Option<u32>,
}

/// The plan for `rate_per_s` (> 0, ≤ 1000, as configuration guarantees).
/// At one per second or more a step covers about a second of calls; below
/// that a step is one event and the next is `ceil(1/rate)` seconds later.
pub fn plan(rate_per_s: f64) -> StepPlan {
    let spacing_ms = (1000.0 / rate_per_s).ceil().max(1.0) as i64;
    if rate_per_s < 1.0 {
        return StepPlan {
            max_events: 1,
            spacing_ms,
            slow_delay_s: Some((1.0 / rate_per_s).ceil() as u32),
        };
    }
    let per_second = rate_per_s.floor() as u32;
    StepPlan {
        max_events: per_second.clamp(1, MAX_EVENTS_PER_STEP),
        spacing_ms,
        slow_delay_s: None,
    }
}

impl StepPlan {
    /// When call `i` (0-based) of a step whose first call started at
    /// `start_ms` may start.
    pub fn call_at(&self, start_ms: UnixMillis, i: u32) -> UnixMillis {
        start_ms + i64::from(i) * self.spacing_ms
    }

    /// How the next step is scheduled after `calls` calls that began at
    /// `start_ms`, at `now_ms`: wait inside this invocation for up to a
    /// second (queue delays are whole seconds, so a shorter gap could only
    /// be rounded up into a slower drain), else delay the message.
    pub fn next(&self, start_ms: UnixMillis, calls: u32, now_ms: UnixMillis) -> NextStep {
        if let Some(delay_s) = self.slow_delay_s {
            return NextStep {
                wait_ms: 0,
                delay_s,
            };
        }
        let due = self.call_at(start_ms, calls.max(1));
        let gap = (due - now_ms).max(0);
        if gap <= 1000 {
            NextStep {
                wait_ms: gap,
                delay_s: 0,
            }
        } else {
            NextStep {
                wait_ms: 0,
                delay_s: crate::parking::delay_s_until(due, now_ms),
            }
        }
    }

    /// Whether a step may end its drain now (if D1 then finds no parked
    /// event left): it read fewer parked events than it may take, so it
    /// saw the whole backlog, and skipped none (a skipped event is held
    /// elsewhere, a replay or another step, and may come back parked).
    pub fn may_end(&self, read: usize, skipped: u32) -> bool {
        read < self.max_events as usize && skipped == 0
    }

    /// How long a running step may take (every call at its timeout), so the
    /// chain is not taken for lost while a slow step is still running.
    pub fn step_budget_ms(&self, timeout_ms: u64) -> i64 {
        i64::from(self.max_events) * (timeout_ms as i64 + self.spacing_ms)
    }
}

/// When the next step runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NextStep {
    /// Milliseconds to wait in this invocation before sending it.
    pub wait_ms: i64,
    /// Its `delaySeconds`.
    pub delay_s: u32,
}

/// What a drain step does after one call's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterResult {
    /// Delivered: go on with the next event.
    Continue,
    /// The destination refused this event for good (4xx other than
    /// 408/429): dead-letter it at once and go on.
    DeadLetter(Failure),
    /// The destination is unwell again (5xx, timeout, 429, network): force
    /// the breaker open with this failure, keep the event parked, stop.
    Reopen(Failure),
    /// Something on our side failed (D1, a missing body): keep the event
    /// parked and stop; the next step tries again.
    Stop(Failure),
}

/// Reads one drain call's result. A redirect, or (`credentialed`: the
/// destination sends `auth`) a refused credential, reopens its breaker and
/// keeps the event parked (`crate::deliver::response::parks_destination`)
/// until the URL or the secret is fixed, rather than dead-lettering the
/// backlog one by one.
pub fn after_result(result: &Result<(), Failure>, credentialed: bool) -> AfterResult {
    match result {
        Ok(()) => AfterResult::Continue,
        Err(f) if parks_destination(result, credentialed).is_some() => {
            AfterResult::Reopen(f.clone())
        }
        Err(f) if f.class() == FailureClass::Poison => AfterResult::DeadLetter(f.clone()),
        Err(f) if counts_against_breaker(f) => AfterResult::Reopen(f.clone()),
        Err(f) => AfterResult::Stop(f.clone()),
    }
}

/// Whether a `drains` row's chain is lost: its step was due well before now.
pub fn chain_is_stale(next_step_at_ms: UnixMillis, now_ms: UnixMillis) -> bool {
    next_step_at_ms < now_ms - STALE_AFTER_MS
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::error_code::ErrorCode;

    #[test]
    fn the_plan_follows_the_rate() {
        let table = [
            (10.0, 10, 100, None),
            (20.0, 20, 50, None),
            (1000.0, 20, 1, None),
            (1.0, 1, 1000, None),
            (2.5, 2, 400, None),
            (3.0, 3, 334, None),
            (0.5, 1, 2000, Some(2)),
            (0.3, 1, 3334, Some(4)),
        ];
        for (rate, k, spacing, slow) in table {
            let p = plan(rate);
            assert_eq!(
                (p.max_events, p.spacing_ms, p.slow_delay_s),
                (k, spacing, slow),
                "{rate}"
            );
        }
    }

    #[test]
    fn the_mean_rate_never_exceeds_the_configured_rate() {
        for rate in [0.3, 0.5, 1.0, 2.5, 3.0, 10.0, 20.0, 333.0, 1000.0] {
            let p = plan(rate);
            // Ten steps, each as fast as the plan allows, calls taking no time.
            let mut start = 0;
            let mut calls = 0u32;
            let mut last = 0;
            for _ in 0..10 {
                for i in 0..p.max_events {
                    last = p.call_at(start, i);
                    calls += 1;
                }
                let next = p.next(start, p.max_events, last);
                start = last + next.wait_ms + i64::from(next.delay_s) * 1000;
            }
            let span_s = (start as f64) / 1000.0;
            assert!(
                f64::from(calls) / span_s <= rate * 1.000_001,
                "{rate}: {calls} in {span_s}s"
            );
            // And no slower than half the rate: the drain keeps up.
            assert!(
                f64::from(calls) / span_s >= rate * 0.5,
                "{rate}: {calls} in {span_s}s"
            );
        }
    }

    #[test]
    fn the_next_step_waits_in_process_for_short_gaps_and_delays_long_ones() {
        let p = plan(20.0);
        assert_eq!(
            p.next(0, 20, 950),
            NextStep {
                wait_ms: 50,
                delay_s: 0
            }
        );
        assert_eq!(
            p.next(0, 20, 5_000),
            NextStep {
                wait_ms: 0,
                delay_s: 0
            }
        );
        assert_eq!(
            p.next(0, 3, 100),
            NextStep {
                wait_ms: 50,
                delay_s: 0
            }
        );
        let slow = plan(0.25);
        assert_eq!(
            slow.next(0, 1, 10),
            NextStep {
                wait_ms: 0,
                delay_s: 4
            }
        );
        let one = plan(1.0);
        assert_eq!(
            one.next(0, 1, 0),
            NextStep {
                wait_ms: 1000,
                delay_s: 0
            }
        );
        let odd = StepPlan {
            max_events: 1,
            spacing_ms: 2_500,
            slow_delay_s: None,
        };
        assert_eq!(
            odd.next(0, 1, 100),
            NextStep {
                wait_ms: 0,
                delay_s: 3
            }
        );
    }

    #[test]
    fn each_result_continues_dead_letters_reopens_or_stops() {
        use ErrorCode::*;
        let table = [
            (Upstream4xx, "dead"),
            (AuthExpired, "dead"),
            (UpstreamRedirect, "reopen"),
            (Upstream5xx, "reopen"),
            (Timeout, "reopen"),
            (RateLimited, "reopen"),
            (Unknown, "reopen"),
            (D1Unavailable, "stop"),
            (CircuitOpen, "stop"),
        ];
        assert_eq!(after_result(&Ok(()), false), AfterResult::Continue);
        assert_eq!(
            after_result(&Err(Failure::new(AuthExpired, "x")), true),
            AfterResult::Reopen(Failure::new(AuthExpired, "x")),
            "a destination with auth keeps its backlog parked until the secret is fixed"
        );
        for (code, want) in table {
            let got = match after_result(&Err(Failure::new(code, "x")), false) {
                AfterResult::DeadLetter(f) | AfterResult::Reopen(f) | AfterResult::Stop(f)
                    if f.code != code =>
                {
                    panic!("{code}: the failure changed")
                }
                AfterResult::DeadLetter(_) => "dead",
                AfterResult::Reopen(_) => "reopen",
                AfterResult::Stop(_) => "stop",
                AfterResult::Continue => "continue",
            };
            assert_eq!(got, want, "{code}");
        }
    }

    #[test]
    fn a_step_may_end_the_drain_only_when_it_saw_the_whole_backlog_and_skipped_none() {
        let p = plan(10.0);
        let table = [
            (0, 0, true),
            (9, 0, true),
            (10, 0, false),
            (3, 1, false),
            (0, 1, false),
        ];
        for (read, skipped, want) in table {
            assert_eq!(p.may_end(read, skipped), want, "{read} {skipped}");
        }
        assert!(!plan(0.5).may_end(1, 0), "a slow plan takes one at a time");
    }

    #[test]
    fn a_chain_is_stale_a_minute_after_its_step_was_due() {
        assert!(!chain_is_stale(100_000, 160_000));
        assert!(chain_is_stale(100_000, 160_001));
        assert_eq!(plan(10.0).step_budget_ms(10_000), 10 * 10_100);
    }
}
