//! `PARK_MAX_AGE`: a parked event that waited too long goes to the DLQ with
//! its root cause, never with a bare `CIRCUIT_OPEN`.

use crate::state::error_code::{ErrorCode, Failure};
use crate::UnixMillis;

/// How many over-age events one drain step dead-letters at most, so a
/// step stays well inside an invocation's limits; the rest go next step.
pub const EXPIRE_PER_STEP: u32 = 50;

/// The `parked_at` before which a parked event is over age.
pub fn parked_before(now_ms: UnixMillis, max_age_ms: i64) -> UnixMillis {
    now_ms.saturating_sub(max_age_ms)
}

/// The failure a parked event is dead-lettered with, if it was first
/// parked at `parked_at_ms` and has been parked longer than `max_age_ms`.
///
/// The code is the root cause: `last_error` (its last real failure), else
/// `parked_cause` (the failure that opened the breaker when it was
/// parked); `CIRCUIT_OPEN` only when neither is known. A `CIRCUIT_OPEN`
/// stored as the last error says nothing about the destination, so it is
/// skipped like an unknown one.
pub fn expired(
    parked_at_ms: UnixMillis,
    now_ms: UnixMillis,
    max_age_ms: i64,
    last_error: Option<ErrorCode>,
    parked_cause: Option<ErrorCode>,
) -> Option<Failure> {
    let age_ms = now_ms - parked_at_ms;
    if age_ms <= max_age_ms {
        return None;
    }
    let real = |c: &ErrorCode| *c != ErrorCode::CircuitOpen;
    let code = last_error
        .filter(real)
        .or(parked_cause.filter(real))
        .unwrap_or(ErrorCode::CircuitOpen);
    let mut failure = Failure::new(
        code,
        format!(
            "parked too long: waited {}s for the destination to recover, more than PARK_MAX_AGE ({}s); last failure {code}",
            age_ms / 1000,
            max_age_ms / 1000
        ),
    );
    if code == ErrorCode::CircuitOpen {
        failure.cause = None;
    }
    Some(failure)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ErrorCode::*;

    #[test]
    fn an_over_age_event_keeps_its_root_cause() {
        let max = 2_000;
        let table = [
            // Not over age yet (the limit itself is still allowed).
            (9_000, None, Some(Upstream5xx), None),
            (8_000, Some(Timeout), None, None),
            // Over age: the last real failure wins.
            (7_999, Some(Upstream5xx), Some(Timeout), Some(Upstream5xx)),
            (0, Some(Timeout), None, Some(Timeout)),
            // Never reached the destination: the breaker's cause.
            (0, None, Some(RateLimited), Some(RateLimited)),
            (0, Some(CircuitOpen), Some(Upstream5xx), Some(Upstream5xx)),
            // Nothing known.
            (0, None, None, Some(CircuitOpen)),
            (0, Some(CircuitOpen), None, Some(CircuitOpen)),
        ];
        for (parked_at, last, cause, want) in table {
            let got = expired(parked_at, 10_000, max, last, cause);
            assert_eq!(
                got.as_ref().map(|f| f.code),
                want,
                "{parked_at} {last:?} {cause:?}"
            );
            if let Some(f) = got {
                assert!(f.message.contains("parked too long"), "{}", f.message);
                assert!(f.message.contains("PARK_MAX_AGE"));
            }
        }
    }

    #[test]
    fn the_cutoff_is_now_minus_the_age_limit() {
        assert_eq!(parked_before(10_000, 2_000), 8_000);
        assert_eq!(parked_before(i64::MIN + 1, 2_000), i64::MIN);
    }
}
