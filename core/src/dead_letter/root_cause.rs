//! The root cause of a dead letter: what the on-call engineer should see
//! when grouping by code.
//!
//! An attempt refused by an open breaker (`CIRCUIT_OPEN`) says nothing about
//! the destination itself, so it never hides a real failure: the code is
//! the most recent failure that came from the destination or the data; for
//! an event that never reached the destination, the failure that opened
//! the breaker; `CIRCUIT_OPEN` only when neither is known.

use crate::retry::attempt::AttemptRecord;
use crate::state::error_code::{ErrorCode, Failure};

/// The root-cause failure over `history` (oldest first), falling back to
/// `last`, the failure that ended the message's life.
pub fn root_cause(history: &[AttemptRecord], last: &Failure) -> Failure {
    if last.code != ErrorCode::CircuitOpen {
        return last.clone();
    }
    if let Some(real) = history
        .iter()
        .rev()
        .find(|a| a.code != ErrorCode::CircuitOpen)
    {
        return Failure::new(real.code, real.message.clone());
    }
    let cause = last
        .cause
        .or_else(|| history.iter().rev().find_map(|a| a.cause));
    match cause {
        Some(code) => Failure::new(
            code,
            format!(
                "never reached the destination: its circuit breaker was opened by {code}; {}",
                last.message
            ),
        ),
        None => last.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ErrorCode::*;

    fn attempt(code: ErrorCode, cause: Option<ErrorCode>) -> AttemptRecord {
        AttemptRecord {
            attempt: 1,
            class: code.class(),
            code,
            message: format!("{code} happened"),
            at_ms: 0,
            cause,
        }
    }

    fn open(cause: Option<ErrorCode>) -> Failure {
        let mut f = Failure::new(CircuitOpen, "circuit open");
        f.cause = cause;
        f
    }

    #[test]
    fn the_root_cause_skips_circuit_open_attempts() {
        let table: [(&[AttemptRecord], Failure, ErrorCode); 7] = [
            // The last failure came from the destination: it stands.
            (
                &[attempt(CircuitOpen, None)],
                Failure::new(Upstream4xx, "400"),
                Upstream4xx,
            ),
            // Five 500s, then the breaker refused the sixth attempt.
            (
                &[
                    attempt(Upstream5xx, None),
                    attempt(Upstream5xx, None),
                    attempt(CircuitOpen, Some(Upstream5xx)),
                ],
                open(Some(Upstream5xx)),
                Upstream5xx,
            ),
            // Timeouts opened it.
            (
                &[attempt(Timeout, None), attempt(CircuitOpen, None)],
                open(None),
                Timeout,
            ),
            // Never reached the destination: the breaker's cause.
            (
                &[attempt(CircuitOpen, Some(Timeout))],
                open(Some(Timeout)),
                Timeout,
            ),
            (&[], open(Some(Upstream5xx)), Upstream5xx),
            (
                &[attempt(CircuitOpen, Some(RateLimited))],
                open(None),
                RateLimited,
            ),
            // Nothing known: CIRCUIT_OPEN itself.
            (&[attempt(CircuitOpen, None)], open(None), CircuitOpen),
        ];
        for (history, last, want) in table {
            assert_eq!(
                root_cause(history, &last).code,
                want,
                "{history:?} / {last:?}"
            );
        }
    }

    #[test]
    fn a_cause_from_the_breaker_says_the_event_never_reached_it() {
        let f = root_cause(&[], &open(Some(Upstream5xx)));
        assert!(
            f.message.contains("never reached the destination"),
            "{}",
            f.message
        );
    }
}
