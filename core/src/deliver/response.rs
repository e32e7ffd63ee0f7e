//! What a downstream's answer means: its status (and `Retry-After`) mapped
//! onto the stable codes and classes, at the boundary where it is observed.

use crate::retry::policy::MAX_QUEUE_DELAY_S;
use crate::state::error_code::{ErrorCode, Failure};
use crate::support::calendar::parse_http_date;
use crate::UnixMillis;

/// Classifies a downstream's HTTP answer. `Ok` for 2xx.
///
/// `retry_after` is the raw `Retry-After` header; it is honoured (as a lower
/// bound on the next delay) for 429 and 503.
pub fn classify_status(
    status: u16,
    retry_after: Option<&str>,
    now_ms: UnixMillis,
) -> Result<(), Failure> {
    let fail = |code, what: &str| {
        Err(Failure::new(
            code,
            format!("downstream answered {status} {what}"),
        ))
    };
    let mut result = match status {
        200..=299 => return Ok(()),
        408 => fail(ErrorCode::Timeout, "(request timeout)"),
        429 => fail(ErrorCode::RateLimited, "(rate limited)"),
        401 | 403 => fail(
            ErrorCode::AuthExpired,
            "(credentials refused; check the downstream's auth and DOWNSTREAM_SIGNING_SECRET)",
        ),
        400..=499 => fail(
            ErrorCode::Upstream4xx,
            "(the downstream refused this event)",
        ),
        500..=599 => fail(ErrorCode::Upstream5xx, "(server error)"),
        _ => fail(ErrorCode::Unknown, "(unexpected status)"),
    };
    if let (Err(f), Some(raw)) = (&mut result, retry_after) {
        if matches!(status, 429 | 503) {
            f.retry_after_s = parse_retry_after(raw, now_ms);
        }
    }
    result
}

/// The failure for a call that did not finish within `timeout_ms`.
pub fn timed_out(timeout_ms: u64) -> Failure {
    Failure::new(
        ErrorCode::Timeout,
        format!("downstream did not answer within {timeout_ms} ms (DELIVERY_TIMEOUT_MS)"),
    )
}

/// The failure for a call that never got an answer (DNS, refused, reset).
pub fn network_error(detail: &str) -> Failure {
    Failure::new(
        ErrorCode::Upstream5xx,
        format!(
            "downstream unreachable: {}",
            crate::support::redact::truncate(detail, 200)
        ),
    )
}

/// Whether a failed delivery says the destination is unwell, so that it
/// counts against the circuit breaker. A deliberate 4xx does not.
pub fn counts_against_breaker(failure: &Failure) -> bool {
    matches!(
        failure.code,
        ErrorCode::Upstream5xx | ErrorCode::Timeout | ErrorCode::RateLimited | ErrorCode::Unknown
    )
}

/// What a finished call tells the breaker: the code of a failure that says
/// the destination is unwell, or `None` for a success or a failure it
/// answered deliberately. `credentialed`: the destination sends `auth`,
/// so a refusal of it ([`credentials_refused`]) says its credential is
/// wrong, which every other call would meet too: it counts, and opens the
/// breaker at once (`crate::deliver::breaker::opens_at_once`).
pub fn breaker_cause(result: &Result<(), Failure>, credentialed: bool) -> Option<ErrorCode> {
    match result {
        Err(f) if counts_against_breaker(f) => Some(f.code),
        Err(f) if credentialed && f.code == ErrorCode::AuthExpired => Some(f.code),
        _ => None,
    }
}

/// Whether a call to a destination with `auth` (`credentialed`) was
/// refused for its credential (`401`, `403`): the event is then parked
/// behind the breaker this opens (cause `auth`), not dead-lettered, so
/// fixing the secret drains the backlog (DESIGN §3). Without `auth` the
/// same answer is a poison `AUTH_EXPIRED`, as before.
pub fn credentials_refused(result: &Result<(), Failure>, credentialed: bool) -> bool {
    credentialed && matches!(result, Err(f) if f.code == ErrorCode::AuthExpired)
}

/// `Retry-After` as whole seconds from now: either delay-seconds or an
/// HTTP-date. Capped at the queue's maximum delay; `None` if unparseable.
pub fn parse_retry_after(raw: &str, now_ms: UnixMillis) -> Option<u32> {
    let raw = raw.trim();
    let seconds = if let Ok(s) = raw.parse::<u64>() {
        s
    } else {
        let at_ms = parse_http_date(raw, now_ms)?;
        u64::try_from((at_ms - now_ms).max(0)).ok()?.div_ceil(1000)
    };
    Some(seconds.min(u64::from(MAX_QUEUE_DELAY_S)) as u32)
}

/// Whether an answer's `Retry-After` can matter: only a refusal's is read
/// ([`classify_status`] ignores it on a 2xx), so a success skips the lookup.
pub fn reads_retry_after(status: u16) -> bool {
    !(200..=299).contains(&status)
}

/// The longest answer body read to its end (and dropped) after a call:
/// a body left unread holds its connection, so the next call of the batch
/// has to open another. A longer body, or one of unknown length, is
/// cancelled instead; the relay never needs its bytes.
pub const MAX_DRAINED_BODY_BYTES: u64 = 64 * 1024;

/// Whether to read an answer's body to its end rather than cancel it,
/// from its `Content-Length` header.
pub fn drain_body(content_length: Option<&str>) -> bool {
    content_length
        .and_then(|v| v.trim().parse::<u64>().ok())
        .is_some_and(|n| n <= MAX_DRAINED_BODY_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::error_code::FailureClass;

    #[test]
    fn only_a_refusal_has_its_retry_after_read() {
        for (status, want) in [
            (200, false),
            (204, false),
            (299, false),
            (300, true),
            (429, true),
            (503, true),
            (199, true),
        ] {
            assert_eq!(reads_retry_after(status), want, "{status}");
            // A success is a success whatever its Retry-After says.
            if !want {
                assert!(classify_status(status, Some("60"), 0).is_ok());
            }
        }
    }

    #[test]
    fn a_short_answer_body_of_known_length_is_read_to_its_end() {
        let table = [
            (Some("11"), true),
            (Some(" 0 "), true),
            (Some("65536"), true),
            (Some("65537"), false),
            (Some("-1"), false),
            (Some("many"), false),
            (None, false),
        ];
        for (length, want) in table {
            assert_eq!(drain_body(length), want, "{length:?}");
        }
    }

    #[test]
    fn each_status_maps_to_its_code_and_class() {
        use ErrorCode::*;
        let table = [
            (500, Some(Upstream5xx), FailureClass::Transient),
            (502, Some(Upstream5xx), FailureClass::Transient),
            (503, Some(Upstream5xx), FailureClass::Transient),
            (408, Some(Timeout), FailureClass::Transient),
            (429, Some(RateLimited), FailureClass::Transient),
            (401, Some(AuthExpired), FailureClass::Poison),
            (403, Some(AuthExpired), FailureClass::Poison),
            (400, Some(Upstream4xx), FailureClass::Poison),
            (404, Some(Upstream4xx), FailureClass::Poison),
            (422, Some(Upstream4xx), FailureClass::Poison),
            (302, Some(ErrorCode::Unknown), FailureClass::Unknown),
        ];
        for (status, code, class) in table {
            let f = classify_status(status, None, 0).unwrap_err();
            assert_eq!(Some(f.code), code, "{status}");
            assert_eq!(f.class(), class, "{status}");
        }
        for ok in [200, 201, 202, 204, 299] {
            assert!(classify_status(ok, None, 0).is_ok());
        }
    }

    #[test]
    fn retry_after_is_read_as_seconds_or_an_http_date() {
        let now = 784_111_777_000; // Sun, 06 Nov 1994 08:49:37 GMT
        let table = [
            ("120", Some(120)),
            (" 5 ", Some(5)),
            ("Sun, 06 Nov 1994 08:50:37 GMT", Some(60)),
            ("Sun, 06 Nov 1994 08:49:37 GMT", Some(0)),
            ("Sat, 05 Nov 1994 08:49:37 GMT", Some(0)),
            ("Sunday, 06-Nov-94 08:50:37 GMT", Some(60)),
            ("Sun Nov  6 08:51:37 1994", Some(120)),
            ("99999999", Some(MAX_QUEUE_DELAY_S)),
            ("soon", None),
            ("-5", None),
            ("Sun, 06 Nov 1994 25:00:00 GMT", None),
        ];
        for (raw, want) in table {
            assert_eq!(parse_retry_after(raw, now), want, "{raw}");
        }
    }

    #[test]
    fn retry_after_is_kept_on_429_and_503_only() {
        assert_eq!(
            classify_status(429, Some("90"), 0)
                .unwrap_err()
                .retry_after_s,
            Some(90)
        );
        assert_eq!(
            classify_status(503, Some("7"), 0)
                .unwrap_err()
                .retry_after_s,
            Some(7)
        );
        assert_eq!(
            classify_status(500, Some("7"), 0)
                .unwrap_err()
                .retry_after_s,
            None
        );
    }

    #[test]
    fn only_signs_of_an_unwell_destination_count_against_the_breaker() {
        let counts =
            |status| counts_against_breaker(&classify_status(status, None, 0).unwrap_err());
        assert!(counts(500) && counts(503) && counts(429) && counts(408));
        assert!(!counts(400) && !counts(401) && !counts(404));
        assert!(counts_against_breaker(&timed_out(100)));
        assert!(counts_against_breaker(&network_error("connection refused")));
    }

    #[test]
    fn a_call_is_healthy_unless_it_failed_in_a_way_that_counts() {
        use ErrorCode::*;
        // (answer, without auth, with auth)
        let table = [
            (Ok(()), None, None),
            (classify_status(400, None, 0), None, None),
            (classify_status(404, None, 0), None, None),
            (classify_status(401, None, 0), None, Some(AuthExpired)),
            (classify_status(403, None, 0), None, Some(AuthExpired)),
            (
                classify_status(500, None, 0),
                Some(Upstream5xx),
                Some(Upstream5xx),
            ),
            (
                classify_status(429, None, 0),
                Some(RateLimited),
                Some(RateLimited),
            ),
            (Err(timed_out(100)), Some(Timeout), Some(Timeout)),
        ];
        for (result, plain, credentialed) in table {
            assert_eq!(breaker_cause(&result, false), plain, "{result:?}");
            assert_eq!(breaker_cause(&result, true), credentialed, "{result:?}");
        }
    }

    #[test]
    fn only_a_credentialed_destinations_401_or_403_is_a_refused_credential() {
        let table = [
            (200, false, false),
            (401, false, true),
            (403, false, true),
            (400, false, false),
            (404, false, false),
            (500, false, false),
            (429, false, false),
        ];
        for (status, plain, credentialed) in table {
            let result = classify_status(status, None, 0);
            assert_eq!(credentials_refused(&result, false), plain, "{status}");
            assert_eq!(credentials_refused(&result, true), credentialed, "{status}");
        }
        assert!(!credentials_refused(&Err(timed_out(100)), true));
    }
}
