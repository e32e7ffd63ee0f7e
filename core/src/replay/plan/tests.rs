//! Replay-all's plan: request parsing, batches, the canary and a slice's bound.

use super::*;
use crate::state::error_code::ErrorCode;
use serde_json::json;

fn c(id: &str, hash: &str) -> Candidate {
    Candidate {
        id: id.into(),
        content_hash: hash.into(),
    }
}

#[test]
fn a_reason_needs_five_characters_after_trimming() {
    let table = [
        (json!("fixed the downstream"), Ok("fixed the downstream")),
        (json!("  ok go  "), Ok("ok go")),
        (json!("abcd"), Err("reason")),
        (json!("   abcd   "), Err("reason")),
        (json!("ééééé"), Ok("ééééé")),
        (json!(12345), Err("reason")),
        (json!("x".repeat(501)), Err("reason")),
    ];
    for (raw, want) in table {
        let got = validate_reason(Some(&raw));
        match want {
            Ok(text) => assert_eq!(got.unwrap(), text),
            Err(field) => assert_eq!(got.unwrap_err().field, field, "{raw}"),
        }
    }
    assert!(validate_reason(None).is_err());
}

#[test]
fn concurrency_defaults_to_five_and_is_clamped_to_one_to_fifty() {
    let table = [
        (None, 5),
        (Some(json!(null)), 5),
        (Some(json!(0)), 1),
        (Some(json!(-3)), 1),
        (Some(json!(20)), 20),
        (Some(json!(51)), 50),
        (Some(json!(1e9)), 50),
    ];
    for (raw, want) in table {
        assert_eq!(clamp_concurrency(raw.as_ref()).unwrap(), want, "{raw:?}");
    }
    assert!(clamp_concurrency(Some(&json!("five"))).is_err());
}

#[test]
fn a_replay_all_body_is_parsed_with_its_defaults() {
    let r = parse_replay_all(&json!({"reason": "downstream is back"})).unwrap();
    assert_eq!(
        (
            r.concurrency,
            r.canary,
            r.rate_per_s,
            r.max_entries,
            r.cursor
        ),
        (5, None, None, 100, None)
    );
    let r = parse_replay_all(&json!({"reason": "downstream is back", "concurrency": 20, "canary": 3, "rate_per_s": 2.5, "filter": {"code": "UPSTREAM_5XX", "source": "demo-stripe"}, "max_entries": 500})).unwrap();
    assert_eq!(
        (r.concurrency, r.canary, r.rate_per_s, r.max_entries),
        (20, Some(3), Some(2.5), 500)
    );
    assert_eq!(r.filter.code, Some(ErrorCode::Upstream5xx));
}

#[test]
fn a_bad_replay_all_body_names_the_field() {
    let table = [
        (json!([]), "body"),
        (json!({}), "reason"),
        (json!({"reason": "long enough", "canary": 0}), "canary"),
        (
            json!({"reason": "long enough", "rate_per_s": 0}),
            "rate_per_s",
        ),
        (
            json!({"reason": "long enough", "max_entries": 501}),
            "max_entries",
        ),
        (
            json!({"reason": "long enough", "filter": {"code": "NOPE"}}),
            "filter.code",
        ),
        (
            json!({"reason": "long enough", "filter": {"status": "replayed"}}),
            "filter.status",
        ),
        (json!({"reason": "long enough", "cursor": 5}), "cursor"),
    ];
    for (body, field) in table {
        assert_eq!(parse_replay_all(&body).unwrap_err().field, field, "{body}");
    }
}

#[test]
fn a_plan_dedupes_identical_payloads_splits_the_canary_and_batches_by_concurrency() {
    let candidates = [
        c("a", "1"),
        c("b", "2"),
        c("c", "1"),
        c("d", "3"),
        c("e", "4"),
        c("f", "5"),
        c("g", "6"),
    ];
    let p = plan(&candidates, Some(2), 2);
    assert_eq!(p.deduped, vec!["c"]);
    assert_eq!(p.canary, vec![vec!["a", "b"]]);
    assert_eq!(p.rest, vec![vec!["d", "e"], vec!["f", "g"]]);
    assert_eq!(p.canary_size(), 2);

    let no_canary = plan(&candidates, None, 5);
    assert!(no_canary.canary.is_empty());
    assert_eq!(
        no_canary.rest,
        vec![vec!["a", "b", "d", "e", "f"], vec!["g"]]
    );

    let all_canary = plan(&candidates[..2], Some(10), 5);
    assert_eq!((all_canary.canary_size(), all_canary.rest.len()), (2, 0));
    assert_eq!(plan(&[], Some(3), 5), Plan::default());
}

#[test]
fn a_paced_slice_holds_at_most_twenty_seconds_of_starts() {
    let table = [
        (json!({}), 100),
        (json!({"max_entries": 500}), 500),
        (json!({"rate_per_s": 0.1}), 2),
        (json!({"rate_per_s": 2}), 40),
        (json!({"rate_per_s": 4, "max_entries": 13}), 13),
        (json!({"rate_per_s": 100, "max_entries": 500}), 500),
        (json!({"rate_per_s": 10, "max_entries": 500}), 200),
    ];
    for (extra, want) in table {
        let body = with_reason(extra);
        let r = parse_replay_all(&body).unwrap();
        assert_eq!(r.slice_entries(), want, "{body}");
    }
}

#[test]
fn failed_replays_poison_an_entry_at_the_limit_and_a_success_replays_it() {
    let table = [
        (0, true, 5, EntryStatus::Replayed, 0),
        (3, true, 5, EntryStatus::Replayed, 3),
        (0, false, 5, EntryStatus::Pending, 1),
        (3, false, 5, EntryStatus::Pending, 4),
        (4, false, 5, EntryStatus::Poisoned, 5),
        (0, false, 1, EntryStatus::Poisoned, 1),
    ];
    for (before, ok, max, status, after) in table {
        assert_eq!(
            after_replay(before, ok, max),
            (status, after),
            "{before} {ok} {max}"
        );
    }
}

#[test]
fn only_pending_entries_may_be_replayed() {
    assert!(check_replayable(EntryStatus::Pending).is_ok());
    assert!(check_replayable(EntryStatus::Replayed).is_err());
    assert!(check_replayable(EntryStatus::Poisoned).is_err());
    assert!(check_replayable(EntryStatus::Archived).is_err());
    assert!(check_replayable(EntryStatus::Discarded).is_err());
    for s in ["pending", "replayed", "poisoned", "archived", "discarded"] {
        assert_eq!(EntryStatus::parse(s).map(EntryStatus::as_str), Ok(s));
    }
}

const REASON: &str = "downstream is back";

/// A replay-all body: the valid reason plus `extra`'s fields.
fn with_reason(extra: serde_json::Value) -> serde_json::Value {
    let mut body = json!({ "reason": REASON });
    for (k, v) in extra.as_object().expect("an object").clone() {
        body[k] = v;
    }
    body
}

#[test]
fn an_unknown_replay_all_field_at_any_depth_is_refused_naming_its_path() {
    let long = "f".repeat(41);
    let long_shown = format!("\"{}\"…", "f".repeat(40));
    let table = [
        (json!({"fitler": {"code": "TIMEOUT"}}), "fitler"),
        (json!({"Reason": "x"}), "Reason"),
        (json!({"concurrrency": 5}), "concurrrency"),
        (json!({"dry_run": true}), "dry_run"),
        (json!({"": 1}), "\"\""),
        (json!({ long.as_str(): 1 }), long_shown.as_str()),
        (
            json!({"filter": {"sourse": "demo-stripe"}}),
            "filter.sourse",
        ),
        (
            json!({"filter": {"status": "pending", "stauts": "pending"}}),
            "filter.stauts",
        ),
        (json!({"filter": {"cursor": "c1.x"}}), "filter.cursor"),
        (json!({"filter": {"filter": {}}}), "filter.filter"),
    ];
    for (extra, field) in table {
        let body = with_reason(extra);
        let err = parse_replay_all(&body).unwrap_err();
        assert_eq!(err.field, field, "{body}");
    }
    let err = parse_replay_all(&with_reason(json!({"fitler": {}}))).unwrap_err();
    assert_eq!(
        err.message,
        "is not a field of this body; it takes reason, concurrency, filter, canary, rate_per_s, max_entries and cursor"
    );
    let err = parse_replay_all(&with_reason(json!({"filter": {"sourse": "a"}}))).unwrap_err();
    assert!(
        err.message
            .contains("status, class, code, source, destination, kind and signature"),
        "{}",
        err.message
    );
}

#[test]
fn an_unknown_field_is_refused_even_beside_a_missing_reason() {
    // The typo is reported first: fixing it may be all the caller needs.
    let err = parse_replay_all(&json!({"fitler": {}})).unwrap_err();
    assert_eq!(err.field, "fitler");
}

#[test]
fn a_replay_all_field_of_the_wrong_type_is_refused_naming_it() {
    let table = [
        (json!({"reason": 12345}), "reason"),
        (json!({"reason": ["fixed the schema"]}), "reason"),
        (json!({"reason": {"text": "fixed the schema"}}), "reason"),
        (json!({"reason": true}), "reason"),
        (json!({"reason": null}), "reason"),
        (with_reason(json!({"concurrency": "five"})), "concurrency"),
        (with_reason(json!({"concurrency": true})), "concurrency"),
        (with_reason(json!({"concurrency": [5]})), "concurrency"),
        (with_reason(json!({"concurrency": {"n": 5}})), "concurrency"),
        (with_reason(json!({"filter": "pending"})), "filter"),
        (with_reason(json!({"filter": ["pending"]})), "filter"),
        (with_reason(json!({"filter": 1})), "filter"),
        (with_reason(json!({"filter": false})), "filter"),
        (
            with_reason(json!({"filter": {"status": 1}})),
            "filter.status",
        ),
        (
            with_reason(json!({"filter": {"class": []}})),
            "filter.class",
        ),
        (with_reason(json!({"filter": {"code": {}}})), "filter.code"),
        (
            with_reason(json!({"filter": {"source": true}})),
            "filter.source",
        ),
        (
            with_reason(json!({"filter": {"signature": 7}})),
            "filter.signature",
        ),
        (with_reason(json!({"canary": "3"})), "canary"),
        (with_reason(json!({"canary": 2.5})), "canary"),
        (with_reason(json!({"canary": true})), "canary"),
        (with_reason(json!({"rate_per_s": "fast"})), "rate_per_s"),
        (with_reason(json!({"rate_per_s": [1]})), "rate_per_s"),
        (with_reason(json!({"max_entries": "100"})), "max_entries"),
        (with_reason(json!({"max_entries": 10.5})), "max_entries"),
        (with_reason(json!({"max_entries": {}})), "max_entries"),
        (with_reason(json!({"cursor": 5})), "cursor"),
        (with_reason(json!({"cursor": true})), "cursor"),
        (with_reason(json!({"cursor": ["c1.x"]})), "cursor"),
        (with_reason(json!({"cursor": {}})), "cursor"),
    ];
    for (body, field) in table {
        let err = parse_replay_all(&body).unwrap_err();
        assert_eq!(err.field, field, "{body}");
    }
}

#[test]
fn a_replay_all_body_that_is_not_an_object_is_refused() {
    for body in [
        json!([]),
        json!([REASON]),
        json!(REASON),
        json!(5),
        json!(null),
    ] {
        let err = parse_replay_all(&body).unwrap_err();
        assert_eq!(err.field, "body", "{body}");
        assert!(err.message.contains("JSON object"), "{}", err.message);
    }
}

#[test]
fn each_replay_all_range_is_accepted_at_its_edges() {
    let ok = |r: ReplayAllRequest| {
        (
            r.concurrency,
            r.canary,
            r.rate_per_s,
            r.max_entries,
            r.cursor,
        )
    };
    let accepted = [
        (json!({"concurrency": 0}), (1, None, None, 100, None)),
        (json!({"concurrency": 1}), (1, None, None, 100, None)),
        (json!({"concurrency": 0.5}), (1, None, None, 100, None)),
        (json!({"concurrency": 50}), (50, None, None, 100, None)),
        (json!({"concurrency": 51}), (50, None, None, 100, None)),
        (json!({"concurrency": -1e9}), (1, None, None, 100, None)),
        (json!({"concurrency": null}), (5, None, None, 100, None)),
        (json!({"canary": 1}), (5, Some(1), None, 100, None)),
        (json!({"canary": 500}), (5, Some(500), None, 100, None)),
        (json!({"canary": null}), (5, None, None, 100, None)),
        (json!({"rate_per_s": 0.1}), (5, None, Some(0.1), 100, None)),
        (
            json!({"rate_per_s": 100}),
            (5, None, Some(100.0), 100, None),
        ),
        (json!({"rate_per_s": null}), (5, None, None, 100, None)),
        (json!({"max_entries": 1}), (5, None, None, 1, None)),
        (json!({"max_entries": 500}), (5, None, None, 500, None)),
        (json!({"max_entries": null}), (5, None, None, 100, None)),
        (json!({"cursor": null}), (5, None, None, 100, None)),
        (
            json!({"cursor": "c1.x"}),
            (5, None, None, 100, Some("c1.x".into())),
        ),
    ];
    for (extra, want) in accepted {
        let body = with_reason(extra);
        assert_eq!(parse_replay_all(&body).map(ok), Ok(want), "{body}");
    }
}

#[test]
fn each_replay_all_range_is_refused_past_its_edges() {
    let refused = [
        (json!({"canary": 0}), "canary"),
        (json!({"canary": 501}), "canary"),
        (json!({"canary": -1}), "canary"),
        (json!({"rate_per_s": 0}), "rate_per_s"),
        (json!({"rate_per_s": -1}), "rate_per_s"),
        (json!({"rate_per_s": 0.099}), "rate_per_s"),
        (json!({"rate_per_s": 100.001}), "rate_per_s"),
        (json!({"rate_per_s": 1000}), "rate_per_s"),
        (json!({"max_entries": 0}), "max_entries"),
        (json!({"max_entries": 501}), "max_entries"),
        (json!({"max_entries": -5}), "max_entries"),
        (json!({"reason": "abcd"}), "reason"),
        (json!({"reason": "   abcd   "}), "reason"),
        (json!({"reason": "x".repeat(501)}), "reason"),
    ];
    for (extra, field) in refused {
        let body = with_reason(extra);
        assert_eq!(parse_replay_all(&body).unwrap_err().field, field, "{body}");
    }
    for reason in [
        "abcde".to_owned(),
        "x".repeat(500),
        format!("  {}  ", "é".repeat(500)),
    ] {
        let body = json!({ "reason": reason });
        assert!(parse_replay_all(&body).is_ok(), "{body}");
    }
}

#[test]
fn the_known_field_messages_are_unchanged() {
    let table = [
        (
            json!({}),
            "is required: say why you are replaying, in at least 5 characters",
        ),
        (
            with_reason(json!({"concurrency": "x"})),
            "must be a number from 1 to 50",
        ),
        (
            with_reason(json!({"canary": 0})),
            "must be a whole number from 1 to 500",
        ),
        (with_reason(json!({"rate_per_s": 0})), RATE_RANGE),
        (
            with_reason(json!({"max_entries": 0})),
            "must be a whole number from 1 to 500",
        ),
        (
            with_reason(json!({"cursor": 1})),
            "must be the next_cursor string of a previous answer",
        ),
        (
            with_reason(json!({"filter": {"status": "poisoned"}})),
            "replay-all replays pending entries only; omit it or use \"pending\"",
        ),
        (
            json!({"reason": " abc "}),
            "must be at least 5 characters after trimming (got 3)",
        ),
    ];
    for (body, message) in table {
        assert_eq!(
            parse_replay_all(&body).unwrap_err().message,
            message,
            "{body}"
        );
    }
}

#[test]
fn a_replay_all_filter_may_name_a_signature() {
    let body =
        with_reason(json!({"filter": {"status": "pending", "signature": "sig_0123456789abcdef"}}));
    let r = parse_replay_all(&body).unwrap();
    assert_eq!(r.filter.signature.as_deref(), Some("sig_0123456789abcdef"));
    let bad = with_reason(json!({"filter": {"signature": "sig_XYZ"}}));
    assert_eq!(
        parse_replay_all(&bad).unwrap_err().field,
        "filter.signature"
    );
}

#[test]
fn a_reason_body_is_exactly_a_reason() {
    let accepted = [
        (
            json!({"reason": "fixed the downstream"}),
            "fixed the downstream",
        ),
        (json!({"reason": "  ok go  "}), "ok go"),
        (json!({"reason": "abcde"}), "abcde"),
    ];
    for (body, want) in accepted {
        assert_eq!(parse_reason_body(&body).as_deref(), Ok(want), "{body}");
    }
    let long = "x".repeat(501);
    let refused = [
        (json!({}), "reason"),
        (json!({"reason": null}), "reason"),
        (json!({"reason": 12345}), "reason"),
        (json!({"reason": ["fixed it"]}), "reason"),
        (json!({"reason": "abcd"}), "reason"),
        (json!({ "reason": long }), "reason"),
        (json!({"reason": REASON, "concurrency": 5}), "concurrency"),
        (json!({"reason": REASON, "filter": {}}), "filter"),
        (json!({"reasn": REASON}), "reasn"),
        (json!([REASON]), "body"),
        (json!(REASON), "body"),
        (json!(null), "body"),
    ];
    for (body, field) in refused {
        assert_eq!(parse_reason_body(&body).unwrap_err().field, field, "{body}");
    }
    let err = parse_reason_body(&json!({"reasn": REASON})).unwrap_err();
    assert_eq!(err.message, "is not a field of this body; it takes reason");
}

#[test]
fn only_duplicates_of_a_payload_that_succeeded_are_closed() {
    let c = |id: &str, hash: &str| Candidate {
        id: id.into(),
        content_hash: hash.into(),
    };
    let candidates = [
        c("a", "h1"),
        c("b", "h2"),
        c("a2", "h1"),
        c("b2", "h2"),
        c("b3", "h2"),
    ];
    let deduped: Vec<String> = ["a2", "b2", "b3"].map(String::from).to_vec();
    let table: [(&[&str], &[&str]); 4] = [
        (&["a", "b"], &["a2", "b2", "b3"]),
        (&["a"], &["a2"]),
        (&["b"], &["b2", "b3"]),
        (&[], &[]),
    ];
    for (succeeded, want) in table {
        assert_eq!(
            closable_duplicates(&candidates, &deduped, succeeded),
            want,
            "{succeeded:?}"
        );
    }
}

#[test]
fn the_next_cursor_never_passes_an_entry_over_its_rate() {
    let c = |at: i64, id: &str| Cursor {
        at_ms: at,
        id: id.into(),
    };
    let slice = [c(10, "a"), c(20, "b"), c(30, "c")];
    let end = Some(c(30, "c"));
    let start = Cursor {
        at_ms: i64::MIN,
        id: String::new(),
    };
    let table = [
        // Nothing refused: after the slice, or done.
        (None, None, end.clone(), end.clone()),
        (None, None, None, None),
        // The second refused: after the first, even on the last slice.
        (None, Some(1), None, Some(c(10, "a"))),
        (None, Some(2), end.clone(), Some(c(20, "b"))),
        // The first refused: where this call started, or the very start.
        (Some(c(5, "z")), Some(0), end.clone(), Some(c(5, "z"))),
        (None, Some(0), None, Some(start)),
    ];
    for (incoming, refused, after, want) in table {
        assert_eq!(
            next_cursor(incoming.as_ref(), &slice, refused, after.clone()),
            want,
            "{incoming:?} {refused:?} {after:?}"
        );
    }
}
