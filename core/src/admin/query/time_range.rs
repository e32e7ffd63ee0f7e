//! `since` and `until` of the dead-letter list and groups: when an entry
//! was dead-lettered, each bound unix milliseconds or RFC 3339 (as
//! `parse_since` reads them), both inclusive. A range that is empty by
//! construction (`since` after `until`) is refused rather than answered
//! with nothing, so a swapped pair is noticed.

use super::event_filter::parse_since;
use super::params::set_once;
use super::QueryError;

/// A window on a time column, unix ms; `None` leaves that side open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimeRange {
    /// At or after (inclusive).
    pub since_ms: Option<i64>,
    /// At or before (inclusive).
    pub until_ms: Option<i64>,
}

/// Reads `since` and `until` from decoded query pairs; other names are
/// left to the route's own parser, which knows its whole set. Empty values
/// count as absent; a bound given twice is refused.
pub fn parse_time_range(params: &[(String, String)]) -> Result<TimeRange, QueryError> {
    let mut range = TimeRange::default();
    for (name, value) in params {
        if value.is_empty() {
            continue;
        }
        match name.as_str() {
            "since" => set_once(&mut range.since_ms, name, parse_since(value, name)?)?,
            "until" => set_once(&mut range.until_ms, name, parse_since(value, name)?)?,
            _ => {}
        }
    }
    if let (Some(since), Some(until)) = (range.since_ms, range.until_ms) {
        if since > until {
            return Err(QueryError::new(
                "since",
                "is after until, so nothing could match; swap them, or drop one to leave that side open",
            ));
        }
    }
    Ok(range)
}

#[cfg(test)]
mod tests {
    use super::super::pairs;
    use super::*;

    #[test]
    fn both_bounds_take_unix_ms_or_rfc_3339_and_may_be_left_open() {
        type Case<'a> = (&'a [(&'a str, &'a str)], Option<i64>, Option<i64>);
        let table: [Case; 6] = [
            (&[], None, None),
            (&[("since", ""), ("until", "")], None, None),
            (&[("since", "1700000000000")], Some(1_700_000_000_000), None),
            (
                &[("until", "2023-11-14T22:13:20Z")],
                None,
                Some(1_700_000_000_000),
            ),
            (
                &[
                    ("since", "2023-11-14T23:13:20+01:00"),
                    ("until", "1700000000000"),
                ],
                Some(1_700_000_000_000),
                Some(1_700_000_000_000),
            ),
            (&[("status", "pending"), ("since", "5")], Some(5), None),
        ];
        for (params, since, until) in table {
            let got = parse_time_range(&pairs(params)).unwrap();
            assert_eq!((got.since_ms, got.until_ms), (since, until), "{params:?}");
        }
    }

    #[test]
    fn a_bad_bound_a_repeated_one_or_a_swapped_pair_is_refused_by_name() {
        let table: [(&[(&str, &str)], &str); 5] = [
            (&[("since", "yesterday")], "since"),
            (&[("until", "2023-13-01T00:00:00Z")], "until"),
            (&[("until", "-5")], "until"),
            (&[("since", "1"), ("since", "2")], "since"),
            (&[("since", "2000"), ("until", "1000")], "since"),
        ];
        for (params, param) in table {
            let err = parse_time_range(&pairs(params)).unwrap_err();
            assert_eq!(err.param, param, "{params:?}");
        }
        let swapped = parse_time_range(&pairs(&[("since", "2"), ("until", "1")])).unwrap_err();
        assert!(swapped.message.contains("swap"), "{}", swapped.message);
    }
}
