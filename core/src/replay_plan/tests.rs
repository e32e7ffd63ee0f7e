use super::*;
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
    assert_eq!(r.filter.code.as_deref(), Some("UPSTREAM_5XX"));
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
fn the_rate_spaces_batch_starts() {
    assert_eq!(batch_start_offset_ms(0, 5, Some(10.0)), 0);
    assert_eq!(batch_start_offset_ms(1, 5, Some(10.0)), 500);
    assert_eq!(batch_start_offset_ms(3, 2, Some(1.0)), 6000);
    assert_eq!(batch_start_offset_ms(7, 5, None), 0);
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
