//! The events listing's filter: each parameter, and the refusals that name it.

use super::super::pairs;
use super::*;

#[test]
fn since_takes_unix_ms_or_rfc_3339() {
    // The RFC 3339 forms are covered one by one in `calendar`; these rows
    // pin the unix-ms branch and that both branches meet here.
    let table = [
        ("0", 0),
        ("1796061600000", 1_796_061_600_000),
        ("9223372036854775807", i64::MAX),
        ("2026-11-30T18:00:00Z", 1_796_061_600_000),
        ("2026-11-30T20:00:00 02:00", 1_796_061_600_000),
        ("1969-12-31T23:59:59.999Z", -1),
    ];
    for (raw, want) in table {
        assert_eq!(parse_since(raw, "since"), Ok(want), "{raw}");
    }
}

#[test]
fn a_since_that_is_not_a_real_time_is_refused_naming_the_param() {
    let table = [
        ("", "expected YYYY-MM-DD"),
        ("-1", "expected YYYY-MM-DD"),
        ("1.5", "expected YYYY-MM-DD"),
        ("9223372036854775808", "too large"),
        ("2026-02-30T00:00:00Z", "day does not exist"),
        ("2026-11-30T18:00:00+24:00", "offset"),
        ("yesterday", "expected YYYY-MM-DD"),
    ];
    for (raw, mentions) in table {
        let err = parse_since(raw, "since").unwrap_err();
        assert_eq!(err.param, "since", "{raw}");
        assert!(err.message.contains(mentions), "{raw}: {}", err.message);
    }
    let long = format!("2026-11-30T18:00:00.{}Z", "1".repeat(100));
    assert_eq!(parse_since(&long, "from").unwrap_err().param, "from");
    let err = parse_since("yesterday", "since").unwrap_err();
    assert!(
        err.message.ends_with("got \"yesterday\""),
        "{}",
        err.message
    );
}

#[test]
fn the_event_filter_reads_source_key_since_and_delivery_status() {
    let key = "k".repeat(400);
    let mut table = vec![
        (vec![], EventFilter::default()),
        (
            vec![
                ("source", "demo-stripe"),
                ("key", "demo-stripe:evt_1"),
                ("since", "1000"),
                ("delivery_status", "failed"),
            ],
            EventFilter {
                source: Some("demo-stripe".into()),
                key: Some("demo-stripe:evt_1".into()),
                since_ms: Some(1000),
                delivery_status: Some("failed".into()),
            },
        ),
        (
            vec![
                ("since", "2026-11-30T18:00:00Z"),
                ("key", ""),
                ("delivery_status", ""),
                ("limit", "5"),
                ("cursor", "left to parse_page"),
            ],
            EventFilter {
                since_ms: Some(1_796_061_600_000),
                ..EventFilter::default()
            },
        ),
        (
            vec![("key", key.as_str())],
            EventFilter {
                key: Some(key.clone()),
                ..EventFilter::default()
            },
        ),
    ];
    for status in DELIVERY_STATUSES {
        let want = EventFilter {
            delivery_status: Some(status.into()),
            ..EventFilter::default()
        };
        table.push((vec![("delivery_status", status)], want));
    }
    for (params, want) in table {
        assert_eq!(parse_event_filter(&pairs(&params)), Ok(want), "{params:?}");
    }
}

#[test]
fn a_bad_event_filter_names_the_param() {
    let long_key = "k".repeat(401);
    let table = [
        (vec![("source", "Demo")], "source", "a-z, 0-9"),
        (vec![("key", long_key.as_str())], "key", "at most 400"),
        (vec![("since", "2026-02-30T00:00:00Z")], "since", "day"),
        (vec![("since", "soon")], "since", "RFC 3339"),
        (
            vec![("delivery_status", "Delivered")],
            "delivery_status",
            "none, filtered, pending, delivering, delivered, failed, parked",
        ),
        (
            vec![("delivery_status", "lost")],
            "delivery_status",
            "one of",
        ),
        (
            vec![("since", "1"), ("since", "2")],
            "since",
            "more than once",
        ),
        (vec![("key", "a"), ("key", "b")], "key", "more than once"),
        (
            vec![("delivery_status", "none"), ("delivery_status", "none")],
            "delivery_status",
            "more than once",
        ),
    ];
    for (params, param, mentions) in table {
        let err = parse_event_filter(&pairs(&params)).unwrap_err();
        assert_eq!(err.param, param, "{params:?}");
        assert!(err.message.contains(mentions), "{}", err.message);
    }
}

#[test]
fn an_unknown_event_param_is_refused_naming_it() {
    let table = [
        vec![("x", "y")],
        vec![("source", "a"), ("status", "pending")],
        vec![("Key", "k")],
        vec![("entry_id", "")],
        vec![("deliverystatus", "none")],
    ];
    for params in table {
        let err = parse_event_filter(&pairs(&params)).unwrap_err();
        assert_eq!(err.param, params.last().unwrap().0, "{params:?}");
        assert_eq!(
            err.message,
            "unknown query parameter; this route accepts source, key, since, delivery_status, limit, cursor"
        );
    }
}
