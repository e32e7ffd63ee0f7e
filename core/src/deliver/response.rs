//! What a downstream's answer means: its status (and `Retry-After`, and a
//! redirect's `Location`) mapped onto the stable codes and classes, at the
//! boundary where it is observed.

use crate::retry::policy::MAX_QUEUE_DELAY_S;
use crate::state::error_code::{ErrorCode, Failure};
use crate::support::calendar::parse_http_date;
use crate::UnixMillis;

/// Classifies a downstream's HTTP answer. `Ok` for 2xx.
///
/// `retry_after` is the raw `Retry-After` header; it is honoured (as a lower
/// bound on the next delay) for 429 and 503. A 3xx is `UPSTREAM_REDIRECT`
/// without its `Location` ([`classify_answer`] names it).
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
        300..=399 => Err(redirected(status, None)),
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

/// The headers of an answer that its meaning reads.
#[derive(Debug, Clone, Copy, Default)]
pub struct AnswerHeaders<'a> {
    /// `Retry-After`, read on a refusal ([`reads_retry_after`]).
    pub retry_after: Option<&'a str>,
    /// `Location`, read on a redirect ([`is_redirect`]).
    pub location: Option<&'a str>,
}

/// [`classify_status`], with a redirect's `Location` named by its host.
pub fn classify_answer(
    status: u16,
    headers: AnswerHeaders<'_>,
    now_ms: UnixMillis,
) -> Result<(), Failure> {
    if is_redirect(status) {
        return Err(redirected(status, headers.location));
    }
    classify_status(status, headers.retry_after, now_ms)
}

/// Whether an answer is a redirect (3xx), which the relay never follows
/// (DESIGN §3): its `Location` is read, only to name its host.
pub fn is_redirect(status: u16) -> bool {
    (300..=399).contains(&status)
}

/// The failure for a redirect to `location`: `UPSTREAM_REDIRECT`, naming
/// where it points by scheme and host only (never a path, query or
/// credential of the URL), and what to do.
pub fn redirected(status: u16, location: Option<&str>) -> Failure {
    let to = match location.map(location_host) {
        Some(Where::Host(host)) => format!("a redirect to {host}"),
        Some(Where::SameHost) => "a redirect to another path of the same host".to_string(),
        Some(Where::Unreadable) => "a redirect to an unreadable Location".to_string(),
        None => "a redirect without a Location".to_string(),
    };
    Failure::new(
        ErrorCode::UpstreamRedirect,
        format!(
            "downstream answered {status} ({to}); redirects are not followed: set the destination's url to where it now lives, and its parked deliveries drain"
        ),
    )
}

/// Where a `Location` points, as far as a message may say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Where {
    /// Another origin: its scheme and host (with a port), nothing else.
    Host(String),
    /// A relative reference: the same host.
    SameHost,
    /// Not a URL a host can be read from.
    Unreadable,
}

/// The scheme and host of a `Location`, without its user-info, path,
/// query or fragment.
pub fn location_host(raw: &str) -> Where {
    let raw = raw.trim();
    let (scheme, rest) = match raw.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        None => match raw.strip_prefix("//") {
            Some(rest) => (None, rest),
            None if raw.is_empty() || raw.contains(':') => return Where::Unreadable,
            None => return Where::SameHost,
        },
    };
    let end = rest.find(['/', '?', '#', '\\']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let scheme_ok = scheme.is_none_or(|s| {
        !s.is_empty()
            && s.len() <= 16
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
    });
    let host_ok = !host.is_empty()
        && host.len() <= 255
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-_:[]".contains(&b));
    if !(scheme_ok && host_ok) {
        return Where::Unreadable;
    }
    let host = host.to_ascii_lowercase();
    match scheme {
        Some(s) => Where::Host(format!("{}://{host}", s.to_ascii_lowercase())),
        None => Where::Host(host),
    }
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
/// counts against the circuit breaker. A deliberate 4xx does not (nor a
/// refused credential or a redirect: those are [`parks_destination`]'s).
pub fn counts_against_breaker(failure: &Failure) -> bool {
    matches!(
        failure.code,
        ErrorCode::Upstream5xx | ErrorCode::Timeout | ErrorCode::RateLimited | ErrorCode::Unknown
    )
}

/// What a finished call tells the breaker: the code of a failure that says
/// the destination is unwell, or `None` for a success or a failure it
/// answered deliberately. A failure that says the destination is wrong
/// for every call alike ([`parks_destination`]) counts, and opens the
/// breaker at once (`crate::deliver::breaker::opens_at_once`).
pub fn breaker_cause(result: &Result<(), Failure>, credentialed: bool) -> Option<ErrorCode> {
    match result {
        Err(f) if counts_against_breaker(f) => Some(f.code),
        _ => parks_destination(result, credentialed),
    }
}

/// The code of a failure that every other call to the destination would
/// meet too, until its configuration is fixed: a redirect
/// (`UPSTREAM_REDIRECT`: its URL is wrong), or for a destination with
/// `auth` (`credentialed`) a refusal of its credential (`401`, `403`:
/// `AUTH_EXPIRED`). The event is then parked behind the breaker this opens
/// (cause `redirect` or `auth`), not dead-lettered, so fixing the URL or
/// the secret drains the backlog (DESIGN §3). Without `auth` a 401 is a
/// poison `AUTH_EXPIRED`, as before.
pub fn parks_destination(result: &Result<(), Failure>, credentialed: bool) -> Option<ErrorCode> {
    match result {
        Err(f) if f.code == ErrorCode::UpstreamRedirect => Some(f.code),
        Err(f) if credentialed && f.code == ErrorCode::AuthExpired => Some(f.code),
        _ => None,
    }
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
/// ([`classify_status`] ignores it on a 2xx and a 3xx), so a success skips
/// the lookup.
pub fn reads_retry_after(status: u16) -> bool {
    !(200..=299).contains(&status) && !is_redirect(status)
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
            (300, false),
            (301, false),
            (308, false),
            (429, true),
            (503, true),
            (199, true),
        ] {
            assert_eq!(reads_retry_after(status), want, "{status}");
            // A success is a success whatever its Retry-After says.
            if (200..=299).contains(&status) {
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
            (301, Some(UpstreamRedirect), FailureClass::Poison),
            (302, Some(UpstreamRedirect), FailureClass::Poison),
            (307, Some(UpstreamRedirect), FailureClass::Poison),
            (308, Some(UpstreamRedirect), FailureClass::Poison),
            (300, Some(UpstreamRedirect), FailureClass::Poison),
            (600, Some(ErrorCode::Unknown), FailureClass::Unknown),
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
            (
                classify_status(301, None, 0),
                Some(UpstreamRedirect),
                Some(UpstreamRedirect),
            ),
            (
                classify_status(308, None, 0),
                Some(UpstreamRedirect),
                Some(UpstreamRedirect),
            ),
        ];
        for (result, plain, credentialed) in table {
            assert_eq!(breaker_cause(&result, false), plain, "{result:?}");
            assert_eq!(breaker_cause(&result, true), credentialed, "{result:?}");
        }
    }

    #[test]
    fn only_a_redirect_or_a_credentialed_destinations_401_or_403_parks_the_destination() {
        use ErrorCode::*;
        // (status, without auth, with auth)
        let table = [
            (200, None, None),
            (401, None, Some(AuthExpired)),
            (403, None, Some(AuthExpired)),
            (400, None, None),
            (404, None, None),
            (500, None, None),
            (429, None, None),
            (301, Some(UpstreamRedirect), Some(UpstreamRedirect)),
            (302, Some(UpstreamRedirect), Some(UpstreamRedirect)),
            (307, Some(UpstreamRedirect), Some(UpstreamRedirect)),
            (308, Some(UpstreamRedirect), Some(UpstreamRedirect)),
        ];
        for (status, plain, credentialed) in table {
            let result = classify_status(status, None, 0);
            assert_eq!(parks_destination(&result, false), plain, "{status}");
            assert_eq!(parks_destination(&result, true), credentialed, "{status}");
        }
        assert_eq!(parks_destination(&Err(timed_out(100)), true), None);
    }

    #[test]
    fn a_redirect_names_its_locations_scheme_and_host_and_nothing_else() {
        let table = [
            (
                "https://new.example/hooks?token=s3cr3t",
                "a redirect to https://new.example)",
            ),
            (
                "https://user:pa55@New.Example:8443/p#f",
                "a redirect to https://new.example:8443)",
            ),
            (
                "http://127.0.0.1:9999/landing?key=k",
                "a redirect to http://127.0.0.1:9999)",
            ),
            ("//cdn.example/x", "a redirect to cdn.example)"),
            ("/moved/here?sig=abc", "another path of the same host"),
            ("https://bad host/", "an unreadable Location"),
            ("javascript:alert(1)", "an unreadable Location"),
            ("", "an unreadable Location"),
        ];
        for (location, words) in table {
            let headers = AnswerHeaders {
                retry_after: None,
                location: Some(location),
            };
            let f = classify_answer(301, headers, 0).unwrap_err();
            assert_eq!(f.code, ErrorCode::UpstreamRedirect, "{location}");
            assert!(f.message.contains(words), "{location}: {}", f.message);
            for secret in [
                "s3cr3t", "pa55", "user", "key=k", "sig=abc", "/hooks", "/p", "#f",
            ] {
                assert!(!f.message.contains(secret), "{location}: {}", f.message);
            }
            assert!(
                f.message.contains("set the destination's url"),
                "{}",
                f.message
            );
        }
        let none = classify_answer(302, AnswerHeaders::default(), 0).unwrap_err();
        assert!(
            none.message.contains("without a Location"),
            "{}",
            none.message
        );
        // Not a redirect: classified as before, Retry-After read.
        let refused = AnswerHeaders {
            retry_after: Some("9"),
            location: Some("https://x.example"),
        };
        assert_eq!(
            classify_answer(429, refused, 0).unwrap_err().retry_after_s,
            Some(9)
        );
        assert!(classify_answer(200, refused, 0).is_ok());
    }
}
