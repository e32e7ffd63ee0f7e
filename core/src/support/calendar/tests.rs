//! Civil dates: RFC 3339 and HTTP dates in RFC 9110's three forms, round trips and refusals.

use super::*;

#[test]
fn days_from_civil_agrees_with_a_day_by_day_count() {
    // Walk every day from 1900 to 2100 and check each is one more than
    // the last; with 1970-01-01 at zero this pins the whole range.
    let mut expected = days_from_civil(1900, 1, 1);
    assert_eq!(days_from_civil(1970, 1, 1), 0);
    for year in 1900..=2100u32 {
        for month in 1..=12 {
            for day in 1..=days_in_month(year, month) {
                assert_eq!(days_from_civil(i64::from(year), month, day), expected);
                expected += 1;
            }
        }
    }
}

#[test]
fn the_civil_date_conversion_matches_known_days() {
    let table = [
        ((1970, 1, 1), 0),
        ((2000, 3, 1), 11_017),
        ((1994, 11, 6), 9_075),
        ((1969, 12, 31), -1),
        ((0, 1, 1), -719_528),
    ];
    for ((y, m, d), want) in table {
        assert_eq!(days_from_civil(y, m, d), want, "{y}-{m}-{d}");
    }
}

#[test]
fn rfc_3339_timestamps_are_read_as_unix_ms() {
    // Expected seconds from `date -u -d <timestamp> +%s`.
    let table = [
        ("2026-11-30T18:00:00Z", 1_796_061_600_000),
        ("2026-11-30t18:00:00z", 1_796_061_600_000),
        ("2026-11-30 18:00:00Z", 1_796_061_600_000),
        ("2026-11-30T18:00:00.250Z", 1_796_061_600_250),
        ("2026-11-30T18:00:00.5Z", 1_796_061_600_500),
        ("2026-11-30T18:00:00.123456789Z", 1_796_061_600_123),
        ("2026-11-30T20:00:00+02:00", 1_796_061_600_000),
        ("2026-11-30T20:00:00 02:00", 1_796_061_600_000),
        ("2026-11-30T12:30:00-05:30", 1_796_061_600_000),
        ("2026-11-30T18:00:00+00:00", 1_796_061_600_000),
        ("2026-11-30T18:00:00-00:00", 1_796_061_600_000),
        ("2026-12-01T17:59:00+23:59", 1_796_061_600_000),
        ("2024-02-29T00:00:00Z", 1_709_164_800_000),
        ("2000-02-29T00:00:00Z", 951_782_400_000),
        ("2000-03-01T00:00:00Z", 951_868_800_000),
        ("1970-01-01T00:00:00Z", 0),
        ("1969-12-31T23:59:59.999Z", -1),
        ("1600-03-01T00:00:00Z", -11_670_912_000_000),
        ("0000-01-01T00:00:00Z", -62_167_219_200_000),
        ("9999-12-31T23:59:59Z", 253_402_300_799_000),
        ("2016-12-31T23:59:60Z", 1_483_228_800_000),
    ];
    for (raw, want) in table {
        assert_eq!(parse_rfc3339_ms(raw), Ok(want), "{raw}");
    }
}

#[test]
fn an_rfc_3339_value_that_is_not_a_real_time_says_what_is_wrong() {
    let long = format!("2026-11-30T18:00:00.{}Z", "1".repeat(100));
    let table = [
        ("2026-02-30T00:00:00Z", "day does not exist"),
        ("2026-02-29T00:00:00Z", "day does not exist"),
        ("1900-02-29T00:00:00Z", "day does not exist"),
        ("2026-04-31T00:00:00Z", "day does not exist"),
        ("2026-01-00T00:00:00Z", "day does not exist"),
        ("2026-13-01T00:00:00Z", "month must be 01-12"),
        ("2026-00-01T00:00:00Z", "month must be 01-12"),
        ("2026-11-30T24:00:00Z", "hour"),
        ("2026-11-30T18:60:00Z", "minute"),
        ("2026-11-30T18:00:61Z", "second"),
        ("2026-11-30T18:00:00+24:00", "offset"),
        ("2026-11-30T18:00:00+02:60", "offset"),
        ("2026-11-30T18:00:00", "expected YYYY-MM-DD"),
        ("2026-11-30", "expected YYYY-MM-DD"),
        ("2026-11-30T18:00Z", "expected YYYY-MM-DD"),
        ("2026-11-30T18:00:00.Z", "expected YYYY-MM-DD"),
        ("2026-11-30T18:00:00+0200", "expected YYYY-MM-DD"),
        ("2026-11-30T18:00:00+2:00", "expected YYYY-MM-DD"),
        ("2026-11-30T18:00:00ZZ", "expected YYYY-MM-DD"),
        ("2026-11-30T18:00:00 Z", "expected YYYY-MM-DD"),
        ("2026/11/30T18:00:00Z", "expected YYYY-MM-DD"),
        ("+026-11-30T18:00:00Z", "expected YYYY-MM-DD"),
        ("2026-1a-30T18:00:00Z", "expected YYYY-MM-DD"),
        ("2026-11-30T18:00:00.12é4Z", "expected YYYY-MM-DD"),
        ("ééééééééééééééééééééé", "expected YYYY-MM-DD"),
        ("yesterday", "expected YYYY-MM-DD"),
        ("", "expected YYYY-MM-DD"),
        (long.as_str(), "expected YYYY-MM-DD"),
    ];
    for (raw, mentions) in table {
        let problem = parse_rfc3339_ms(raw).unwrap_err();
        assert!(problem.contains(mentions), "{raw}: {problem}");
    }
}

#[test]
fn an_imf_fixdate_is_read_as_unix_ms() {
    let table = [
        ("Sun, 06 Nov 1994 08:49:37 GMT", Some(784_111_777_000)),
        ("Sun, 06 Nov 1994 08:50:37 GMT", Some(784_111_837_000)),
        ("Thu, 01 Jan 1970 00:00:00 GMT", Some(0)),
        ("Mon, 30 Nov 2026 18:00:00 GMT", Some(1_796_061_600_000)),
        ("  Sun,  06 Nov 1994 08:49:37 GMT ", Some(784_111_777_000)),
        ("Sun, 06 Nov 1994 08:49:60 GMT", Some(784_111_800_000)),
        ("Sun, 06 Nov 1994 25:00:00 GMT", None),
        ("Sun, 06 Nov 1994 08:60:00 GMT", None),
        ("Sun, 06 Nov 1994 08:49:61 GMT", None),
        ("Sun, 32 Nov 1994 08:49:37 GMT", None),
        ("Sun, 00 Nov 1994 08:49:37 GMT", None),
        ("Sun, 06 nov 1994 08:49:37 GMT", None),
        ("Sun, 06 Nov 1994 08:49:37 UTC", None),
        ("Sun, 06 Nov 1994 08:49 GMT", None),
        ("Sun, 06 Nov 1994 08:49:37:00 GMT", None),
        ("Sun, 06 Nov 10000 08:49:37 GMT", None),
        ("Sun, 06 Nov -1 08:49:37 GMT", None),
        ("Sun, 06 Nov 9223372036854775807 08:49:37 GMT", None),
        ("", None),
    ];
    for (raw, want) in table {
        assert_eq!(parse_http_date(raw, NOW), want, "{raw}");
    }
}

/// 2026-12-04 18:00:00 UTC.
const NOW: UnixMillis = 1_796_407_200_000;

#[test]
fn the_obsolete_rfc_850_and_asctime_forms_are_read_too() {
    // RFC 9110 §5.6.7's own example, in its three forms, and their edges.
    let table = [
        ("Sunday, 06-Nov-94 08:49:37 GMT", Some(784_111_777_000)),
        ("Sunday,  06-Nov-94  08:49:37  GMT", Some(784_111_777_000)),
        ("Sunday, 06-Nov-1994 08:49:37 GMT", Some(784_111_777_000)),
        ("Monday, 30-Nov-26 18:00:00 GMT", Some(1_796_061_600_000)),
        ("Sun Nov  6 08:49:37 1994", Some(784_111_777_000)),
        ("Sun Nov 06 08:49:37 1994", Some(784_111_777_000)),
        ("Mon Nov 30 18:00:00 2026", Some(1_796_061_600_000)),
        ("Thu Jan  1 00:00:00 1970", Some(0)),
        ("Sunday, 06-Nov-94 08:49:37 UTC", None),
        ("Sunday, 06-Nov-94 08:49 GMT", None),
        ("Sunday, 06-Nov-4 08:49:37 GMT", None),
        ("Sunday, 06-Nov-994 08:49:37 GMT", None),
        ("Sunday, 06-nov-94 08:49:37 GMT", None),
        ("Sunday, 06-Nov-94-1 08:49:37 GMT", None),
        ("Sunday, 32-Nov-94 08:49:37 GMT", None),
        ("Sunday, 06-Nov-9x 08:49:37 GMT", None),
        ("Sunday, +6-Nov-94 08:49:37 GMT", None),
        (
            "Sun Nov  6 08:49:37 94",
            Some(days_from_civil(94, 11, 6) * 86_400_000 + 31_777_000),
        ),
        ("Sun Nov  6 08:49:37 1994 GMT", None),
        ("Sun Nov 36 08:49:37 1994", None),
        ("Sun Nov  6 24:49:37 1994", None),
        ("Sun Nov  6 08:49:37 19940", None),
        ("Sun Foo  6 08:49:37 1994", None),
    ];
    for (raw, want) in table {
        assert_eq!(parse_http_date(raw, NOW), want, "{raw}");
    }
}

#[test]
fn a_two_digit_year_more_than_50_years_ahead_is_in_the_past_century() {
    // With now at 2026-12-04 18:00 UTC: 2076-12-04 18:00 is exactly 50
    // years ahead (kept), a second later is more (the 1900s).
    let year_of = |raw: &str| {
        let at = parse_http_date(raw, NOW).unwrap();
        crate::support::utc::utc_day(at)[..4]
            .parse::<i64>()
            .unwrap()
    };
    let table = [
        ("Friday, 04-Dec-26 18:00:00 GMT", 2026),
        ("Saturday, 01-Jan-00 00:00:00 GMT", 2000),
        ("Sunday, 06-Nov-94 08:49:37 GMT", 1994),
        ("Wednesday, 31-Dec-69 23:59:59 GMT", 2069),
        ("Friday, 06-Nov-76 08:49:37 GMT", 2076),
        ("Friday, 04-Dec-76 18:00:00 GMT", 2076),
        ("Friday, 04-Dec-76 18:00:01 GMT", 1976),
        ("Saturday, 05-Dec-76 00:00:00 GMT", 1976),
        ("Sunday, 01-Jan-77 00:00:00 GMT", 1977),
        ("Thursday, 31-Dec-99 23:59:59 GMT", 1999),
    ];
    for (raw, want) in table {
        assert_eq!(year_of(raw), want, "{raw}");
    }
    // Another now, another century: in 2090, "30" is 2130 (40 years on),
    // and "50" is 2050 (2150 would be 60 years on).
    let now_2090 = days_from_civil(2090, 6, 1) * 86_400_000;
    let year_at = |raw: &str, now| {
        crate::support::utc::utc_day(parse_http_date(raw, now).unwrap())[..4]
            .parse::<i64>()
            .unwrap()
    };
    assert_eq!(year_at("Monday, 01-Jan-30 00:00:00 GMT", now_2090), 2130);
    assert_eq!(year_at("Monday, 01-Jan-50 00:00:00 GMT", now_2090), 2050);
}
