//! A delivery's attempts, counted on its row (DESIGN §3, "One hop for the
//! common case"): that count, never the platform's `attempts`, picks each
//! delay and ends the budget. After attempt *n* fails the next one waits
//! the *n*-th of `RETRY_DELAYS_S` (lengthened by a `Retry-After`); when the
//! sixth fails the relay hands the delivery to `webhooks-dlq` itself. A
//! retry that made no call (its lease held elsewhere, D1 unreadable before
//! the claim) goes out as a new message and spends nothing, so the
//! platform's count, which only Cloudflare's own dead-lettering reads,
//! stays at or below the row's.

use crate::deliver::breaker::BreakerOpenAction;
use crate::retry::disposition::{decide, Disposition, Outcome};
use crate::retry::policy::{RetrySchedule, MAX_QUEUE_DELAY_S};
use crate::state::error_code::{ErrorCode, Failure, FailureClass};

/// The attempts a delivery makes before it is dead-lettered: the first and
/// the five retries of `max_retries = 5` (the build refuses another value).
pub const ATTEMPT_BUDGET: u32 = 6;

/// What one call of a delivery comes to, as its holder records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterCall {
    /// A 2xx: the row is `delivered`.
    Delivered,
    /// A failure with budget left: the row is pending again, due after
    /// `delay_s` (its message retried with that delay).
    Retry {
        /// Why it failed.
        failure: Failure,
        /// The wait before the next attempt.
        delay_s: u32,
    },
    /// Poison, a refusal configured to dead-letter, or the last attempt's
    /// failure: the relay hands it to `webhooks-dlq`.
    HandOff {
        /// Why it failed (the envelope's root cause).
        failure: Failure,
    },
}

impl AfterCall {
    /// When the row's next message is due, for a retry.
    pub fn due_at(&self, now_ms: i64) -> Option<i64> {
        match self {
            AfterCall::Retry { delay_s, .. } => Some(now_ms + i64::from(*delay_s) * 1000),
            _ => None,
        }
    }
}

/// What a call's `result` comes to, given the attempts its row counted
/// before it (`attempts_before`; this call is attempt `attempts_before + 1`).
pub fn after_call(
    result: Result<(), &Failure>,
    attempts_before: u32,
    schedule: &RetrySchedule,
    open_action: BreakerOpenAction,
) -> AfterCall {
    let failure = match result {
        Ok(()) => return AfterCall::Delivered,
        Err(f) => f.clone(),
    };
    let poison = failure.class() == FailureClass::Poison
        || (failure.code == ErrorCode::CircuitOpen && open_action == BreakerOpenAction::DeadLetter);
    after_failure(failure, poison, attempts_before, schedule)
}

/// What a failed attempt comes to, given the attempts its row counted
/// before it: handed off when `poison` or when it was the budget's last,
/// else retried after the schedule's delay. A pull consumer's failures
/// are never poison (DESIGN §3, "Pull destinations": a 4xx is retried).
pub fn after_failure(
    failure: Failure,
    poison: bool,
    attempts_before: u32,
    schedule: &RetrySchedule,
) -> AfterCall {
    let attempt = attempts_before.saturating_add(1);
    if poison || attempt >= ATTEMPT_BUDGET {
        return AfterCall::HandOff { failure };
    }
    let delay_s = retry_delay(&failure, attempt, schedule);
    AfterCall::Retry { failure, delay_s }
}

/// The wait after attempt `attempt` failed with `failure`.
pub fn retry_delay(failure: &Failure, attempt: u32, schedule: &RetrySchedule) -> u32 {
    schedule
        .delay_after(attempt)
        .max(failure.retry_after_s.unwrap_or(0))
        .min(MAX_QUEUE_DELAY_S)
}

/// The delay of a new message for a delivery whose lease another holder
/// keeps until `lease_end_ms`: just past its end, so that a holder that
/// died is found by the periodic check first and this message then finds
/// the row settled (at least 1 s, at most the queue's maximum).
pub fn after_lease_held(lease_end_ms: Option<i64>, now_ms: i64) -> u32 {
    let wait_ms = lease_end_ms.map_or(0, |end| end - now_ms);
    let s = (wait_ms.max(0) + 999) / 1000 + 1;
    s.min(i64::from(MAX_QUEUE_DELAY_S)) as u32
}

/// What the `deliveries` consumer does with one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Ack, retry (`msg.retry`, an attempt was counted) or dead-letter.
    Apply(Disposition),
    /// No call was made: the delivery goes out again as a new message after
    /// `delay_s`, and this one is acked, spending no attempt (if that send
    /// fails, this message is retried instead).
    Again {
        /// The wait.
        delay_s: u32,
        /// Why no call was made.
        failure: Failure,
    },
}

/// How one delivery message went, as the pipeline answered it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageResult {
    /// What the core decided of a call made and recorded.
    pub after: Option<AfterCall>,
    /// Whether a call went out (recorded or not).
    pub called: bool,
    /// Another holder leases the delivery until then (`Some(None)`: leased,
    /// end unknown).
    pub held_until: Option<Option<i64>>,
    /// The outcome otherwise (parked, a duplicate, a failure before a call).
    pub outcome: Outcome,
    /// Leased, then handed on without a call (the invocation's call budget
    /// or limits ran out): it goes out again at once.
    pub handed_on: bool,
    /// The attempt number of the call made, as counted on its row (for
    /// the envelope of a hand-off).
    pub attempt: Option<u32>,
}

/// What the consumer does with a message that came to `r` at `now_ms`.
pub fn next(
    r: MessageResult,
    schedule: &RetrySchedule,
    open_action: BreakerOpenAction,
    now_ms: i64,
) -> Next {
    match r.after {
        Some(AfterCall::Delivered) => return Next::Apply(Disposition::Ack),
        Some(AfterCall::Retry { failure, delay_s }) => {
            return Next::Apply(Disposition::Retry { delay_s, failure })
        }
        Some(AfterCall::HandOff { failure }) => {
            return Next::Apply(Disposition::DeadLetter { failure })
        }
        None => {}
    }
    if r.handed_on {
        return Next::Again {
            delay_s: 0,
            failure: Failure::new(
                ErrorCode::Unknown,
                "not started: this invocation's calls were spent; sent again at once",
            ),
        };
    }
    if let Some(end) = r.held_until {
        return Next::Again {
            delay_s: after_lease_held(end, now_ms),
            failure: Failure::new(
                ErrorCode::Unknown,
                "another holder leases this delivery; looking again once its lease ends",
            ),
        };
    }
    // No count to read: the first delay, whatever the platform counted (at
    // least a second, so a message that keeps making no call never spins).
    match decide(r.outcome, 1, schedule, open_action) {
        Disposition::Retry { delay_s, failure } if !r.called => Next::Again {
            delay_s: delay_s.max(1),
            failure,
        },
        d => Next::Apply(d),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(code: ErrorCode) -> Failure {
        Failure::new(code, "boom")
    }

    #[test]
    fn the_row_count_picks_each_delay_and_ends_the_budget_at_six() {
        let s = RetrySchedule::default();
        let park = BreakerOpenAction::Park;
        let f = failed(ErrorCode::Upstream5xx);
        let table = [
            (0, Some(30)),
            (1, Some(60)),
            (2, Some(120)),
            (3, Some(240)),
            (4, Some(480)),
            (5, None),
            (9, None),
        ];
        for (before, delay) in table {
            match (after_call(Err(&f), before, &s, park), delay) {
                (AfterCall::Retry { delay_s, .. }, Some(d)) => {
                    assert_eq!(delay_s, d, "after {before}")
                }
                (AfterCall::HandOff { failure }, None) => {
                    assert_eq!(failure.code, ErrorCode::Upstream5xx)
                }
                (got, want) => panic!("after {before}: {got:?}, wanted {want:?}"),
            }
        }
        assert_eq!(after_call(Ok(()), 5, &s, park), AfterCall::Delivered);
    }

    #[test]
    fn poison_hands_off_at_once_and_retry_after_lengthens_a_delay() {
        let s = RetrySchedule::default();
        let park = BreakerOpenAction::Park;
        for code in [
            ErrorCode::Upstream4xx,
            ErrorCode::AuthExpired,
            ErrorCode::SchemaMismatch,
        ] {
            assert!(
                matches!(
                    after_call(Err(&failed(code)), 0, &s, park),
                    AfterCall::HandOff { .. }
                ),
                "{code}"
            );
        }
        let open = failed(ErrorCode::CircuitOpen);
        assert!(matches!(
            after_call(Err(&open), 0, &s, park),
            AfterCall::Retry { delay_s: 30, .. }
        ));
        assert!(matches!(
            after_call(Err(&open), 0, &s, BreakerOpenAction::DeadLetter),
            AfterCall::HandOff { .. }
        ));
        let mut limited = failed(ErrorCode::RateLimited);
        limited.retry_after_s = Some(900);
        let got = after_call(Err(&limited), 0, &s, park);
        assert!(matches!(got, AfterCall::Retry { delay_s: 900, .. }));
        assert_eq!(got.due_at(1_000), Some(901_000));
        limited.retry_after_s = Some(100_000);
        assert!(matches!(
            after_call(Err(&limited), 0, &s, park),
            AfterCall::Retry {
                delay_s: MAX_QUEUE_DELAY_S,
                ..
            }
        ));
    }

    fn result(
        after: Option<AfterCall>,
        called: bool,
        held: Option<Option<i64>>,
        outcome: Outcome,
    ) -> MessageResult {
        MessageResult {
            after,
            called,
            held_until: held,
            outcome,
            handed_on: false,
            attempt: None,
        }
    }

    fn said(n: Next) -> String {
        match n {
            Next::Apply(Disposition::Ack) => "ack".to_string(),
            Next::Apply(Disposition::Retry { delay_s, .. }) => format!("retry {delay_s}"),
            Next::Apply(Disposition::DeadLetter { .. }) => "dead-letter".to_string(),
            Next::Again { delay_s, .. } => format!("again {delay_s}"),
        }
    }

    #[test]
    fn a_message_that_made_no_call_goes_out_again_and_a_counted_one_retries() {
        let s = RetrySchedule::default();
        let d1 = || Outcome::Failed(failed(ErrorCode::D1Unavailable));
        let retry = AfterCall::Retry {
            failure: failed(ErrorCode::Timeout),
            delay_s: 60,
        };
        let hand_off = AfterCall::HandOff {
            failure: failed(ErrorCode::Timeout),
        };
        let poison = Outcome::Failed(failed(ErrorCode::SchemaMismatch));
        let table = [
            (result(None, false, None, Outcome::Duplicate), "ack"),
            (
                result(Some(AfterCall::Delivered), true, None, Outcome::Duplicate),
                "ack",
            ),
            (
                result(Some(retry), true, None, Outcome::Duplicate),
                "retry 60",
            ),
            (
                result(Some(hand_off), true, None, Outcome::Duplicate),
                "dead-letter",
            ),
            (
                result(None, false, Some(Some(10_000)), Outcome::Duplicate),
                "again 11",
            ),
            (result(None, false, None, d1()), "again 30"),
            (result(None, true, None, d1()), "retry 30"),
            (result(None, false, None, poison), "dead-letter"),
            (result(None, false, None, Outcome::Parked), "ack"),
            (
                MessageResult {
                    handed_on: true,
                    ..result(None, false, None, Outcome::Duplicate)
                },
                "again 0",
            ),
        ];
        for (r, want) in table {
            let got = said(next(r.clone(), &s, BreakerOpenAction::Park, 0));
            assert_eq!(got, want, "{r:?}");
        }
    }

    #[test]
    fn a_held_lease_is_looked_at_again_just_past_its_end() {
        let table = [
            (None, 1),
            (Some(0), 1),
            (Some(999), 2),
            (Some(40_000), 41),
            (Some(i64::MAX / 2), MAX_QUEUE_DELAY_S),
        ];
        for (end, delay) in table {
            assert_eq!(after_lease_held(end, 0), delay, "{end:?}");
        }
    }
}
