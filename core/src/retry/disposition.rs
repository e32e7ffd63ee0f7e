//! What happens to one queue message after one attempt, as a value.
//!
//! The consumer glue computes an outcome per message, asks [`decide`] what to
//! do with it, and applies the answer in exactly one place.

use crate::deliver::breaker::BreakerOpenAction;
use crate::retry::policy::{RetrySchedule, MAX_QUEUE_DELAY_S};
use crate::state::error_code::{ErrorCode, Failure, FailureClass};

/// The result of attempting one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The event was written to D1 for the first time.
    Ingested,
    /// The event was already in D1; nothing new happened.
    Duplicate,
    /// The attempt failed.
    Failed(Failure),
    /// The destination is unwell: the event was parked in D1, and a drain
    /// delivers it later. The message is done; it spent no retry budget.
    Parked,
}

/// What to do with the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Disposition {
    /// Acknowledge: the message is done.
    Ack,
    /// Ask the platform to redeliver it after `delay_s` seconds.
    Retry {
        /// Seconds before the next attempt.
        delay_s: u32,
        /// Why this attempt failed.
        failure: Failure,
    },
    /// Hand it to `webhooks-dlq` with its reason, then acknowledge it.
    DeadLetter {
        /// Why it can never succeed.
        failure: Failure,
    },
}

/// Decides the fate of a message whose attempt number `attempts` (1-based,
/// from the platform) ended with `outcome`.
///
/// Transient and unknown failures are retried on the schedule; a failure's
/// own `retry_after_s` (a downstream's `Retry-After`) is a lower bound. When
/// the platform's `max_retries` runs out it dead-letters the message itself,
/// so this function never counts attempts against a budget.
///
/// `CIRCUIT_OPEN` is transient, but with [`BreakerOpenAction::DeadLetter`]
/// it is handed to the DLQ at once.
pub fn decide(
    outcome: Outcome,
    attempts: u32,
    schedule: &RetrySchedule,
    open_action: BreakerOpenAction,
) -> Disposition {
    match outcome {
        Outcome::Ingested | Outcome::Duplicate | Outcome::Parked => Disposition::Ack,
        Outcome::Failed(failure)
            if failure.code == ErrorCode::CircuitOpen
                && open_action == BreakerOpenAction::DeadLetter =>
        {
            Disposition::DeadLetter { failure }
        }
        Outcome::Failed(failure) => match failure.class() {
            FailureClass::Poison => Disposition::DeadLetter { failure },
            FailureClass::Transient | FailureClass::Unknown => retry(failure, attempts, schedule),
        },
    }
}

/// The retry of a failed attempt: the schedule's delay, lengthened by the
/// failure's own `Retry-After`, capped at the queue's maximum.
fn retry(failure: Failure, attempts: u32, schedule: &RetrySchedule) -> Disposition {
    let delay_s = schedule
        .delay_after(attempts)
        .max(failure.retry_after_s.unwrap_or(0))
        .min(MAX_QUEUE_DELAY_S);
    Disposition::Retry { delay_s, failure }
}

/// What a dead-letter disposition becomes when its hand-off to
/// `webhooks-dlq` could not be sent: a retry on the usual schedule, so the
/// message is never acked without its dead letter, and once the platform's
/// `max_retries` runs out Cloudflare moves it itself. Other dispositions
/// are unaffected.
pub fn after_failed_handoff(
    disposition: Disposition,
    attempts: u32,
    schedule: &RetrySchedule,
) -> Disposition {
    match disposition {
        Disposition::DeadLetter { failure } => retry(failure, attempts, schedule),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RETRY: BreakerOpenAction = BreakerOpenAction::Retry;

    fn failed(code: ErrorCode) -> Outcome {
        Outcome::Failed(Failure::new(code, "boom"))
    }

    #[test]
    fn successes_are_acked() {
        let s = RetrySchedule::default();
        assert_eq!(decide(Outcome::Ingested, 1, &s, RETRY), Disposition::Ack);
        assert_eq!(decide(Outcome::Duplicate, 4, &s, RETRY), Disposition::Ack);
    }

    #[test]
    fn a_parked_event_is_acked_whatever_the_attempt() {
        let s = RetrySchedule::default();
        for (attempts, action) in [
            (1, BreakerOpenAction::Park),
            (6, BreakerOpenAction::Park),
            (2, BreakerOpenAction::Retry),
        ] {
            assert_eq!(
                decide(Outcome::Parked, attempts, &s, action),
                Disposition::Ack
            );
        }
        assert!(
            matches!(
                decide(
                    failed(ErrorCode::CircuitOpen),
                    1,
                    &s,
                    BreakerOpenAction::Park
                ),
                Disposition::Retry { .. }
            ),
            "a refusal that could not park (a replay) takes the retry path"
        );
    }

    #[test]
    fn each_class_takes_its_path() {
        let s = RetrySchedule::default();
        let table = [
            (ErrorCode::D1Unavailable, 1, Some(30)),
            (ErrorCode::Upstream5xx, 3, Some(120)),
            (ErrorCode::Timeout, 5, Some(480)),
            (ErrorCode::CircuitOpen, 2, Some(60)),
            (ErrorCode::Unknown, 4, Some(240)),
            (ErrorCode::Unknown, 6, Some(480)),
            (ErrorCode::BadPayload, 1, None),
            (ErrorCode::SchemaMismatch, 3, None),
            (ErrorCode::Upstream4xx, 1, None),
            (ErrorCode::AuthExpired, 1, None),
        ];
        for (code, attempts, delay) in table {
            let got = decide(failed(code), attempts, &s, RETRY);
            match (delay, got) {
                (Some(d), Disposition::Retry { delay_s, failure }) => {
                    assert_eq!(delay_s, d, "{code} at attempt {attempts}");
                    assert_eq!(failure.code, code);
                }
                (None, Disposition::DeadLetter { failure }) => assert_eq!(failure.code, code),
                (want, got) => panic!("{code}: wanted delay {want:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn an_open_circuit_retries_by_default_and_dead_letters_when_configured() {
        let s = RetrySchedule::default();
        assert!(matches!(
            decide(
                failed(ErrorCode::CircuitOpen),
                1,
                &s,
                BreakerOpenAction::Retry
            ),
            Disposition::Retry { delay_s: 30, .. }
        ));
        assert!(matches!(
            decide(
                failed(ErrorCode::CircuitOpen),
                1,
                &s,
                BreakerOpenAction::DeadLetter
            ),
            Disposition::DeadLetter { .. }
        ));
        assert!(
            matches!(
                decide(
                    failed(ErrorCode::Upstream5xx),
                    1,
                    &s,
                    BreakerOpenAction::DeadLetter
                ),
                Disposition::Retry { .. }
            ),
            "only CIRCUIT_OPEN is affected"
        );
    }

    #[test]
    fn a_retry_after_hint_is_a_lower_bound_on_the_delay() {
        let s = RetrySchedule::default();
        let hinted = |secs| {
            let mut f = Failure::new(ErrorCode::RateLimited, "429");
            f.retry_after_s = Some(secs);
            Outcome::Failed(f)
        };
        let delay = |o| match decide(o, 1, &s, RETRY) {
            Disposition::Retry { delay_s, .. } => delay_s,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            delay(hinted(10)),
            30,
            "a shorter hint does not shorten the schedule"
        );
        assert_eq!(delay(hinted(90)), 90, "a longer hint is honoured");
        assert_eq!(
            delay(hinted(1_000_000)),
            MAX_QUEUE_DELAY_S,
            "capped at the queue limit"
        );
    }

    #[test]
    fn a_failed_handoff_becomes_a_retry_that_honours_retry_after() {
        let s = RetrySchedule::default();
        let dead = |retry_after| {
            let mut failure = Failure::new(ErrorCode::Upstream4xx, "400");
            failure.retry_after_s = retry_after;
            Disposition::DeadLetter { failure }
        };
        let table = [
            (dead(None), 1, Some(30)),
            (dead(None), 3, Some(120)),
            (dead(Some(200)), 1, Some(200)),
            (dead(Some(1_000_000)), 1, Some(MAX_QUEUE_DELAY_S)),
            (Disposition::Ack, 1, None),
        ];
        for (disposition, attempts, want) in table {
            let got = after_failed_handoff(disposition.clone(), attempts, &s);
            match (want, got) {
                (Some(d), Disposition::Retry { delay_s, .. }) => assert_eq!(delay_s, d),
                (None, Disposition::Ack) => {}
                (want, got) => panic!("{disposition:?}: wanted {want:?}, got {got:?}"),
            }
        }
    }
}
