//! Restore rules (pending, swept, discarded, at capacity) and what a discard erases.

use super::*;
use crate::retention::ndjson::encode_rows;
use serde_json::json;

fn tomb(cause: TombstoneCause, prior: Option<EntryStatus>, key: Option<&str>) -> Tombstone {
    Tombstone {
        id: "dlq_1".into(),
        cause,
        prior_status: prior,
        archive_key: key.map(str::to_string),
    }
}

const KEY: &str = "dead_letters/2026-12-03/dlq_1.ndjson";

#[test]
fn restore_follows_the_designed_rules() {
    use EntryStatus as S;
    use TombstoneCause as C;
    let table: [(Tombstone, u64, Result<S, &str>); 8] = [
        (tomb(C::Evicted, None, Some(KEY)), 5, Ok(S::Pending)),
        (tomb(C::Evicted, None, Some(KEY)), 10, Err("AT_CAPACITY")),
        (tomb(C::Evicted, None, None), 5, Err("NOT_ARCHIVED")),
        (
            tomb(C::Swept, Some(S::Replayed), Some(KEY)),
            10,
            Ok(S::Replayed),
        ),
        (
            tomb(C::Swept, Some(S::Archived), Some(KEY)),
            10,
            Ok(S::Archived),
        ),
        (
            tomb(C::Swept, Some(S::Poisoned), Some(KEY)),
            10,
            Ok(S::Poisoned),
        ),
        (
            tomb(C::Swept, Some(S::Discarded), Some(KEY)),
            0,
            Err("DISCARDED"),
        ),
        (
            tomb(C::Swept, Some(S::Discarded), None),
            0,
            Err("DISCARDED"),
        ),
    ];
    for (t, pending, want) in table {
        let got = plan_restore(&t, pending, 10)
            .map(|p| p.status)
            .map_err(|r| r.code());
        assert_eq!(got, want, "{t:?} with {pending} pending");
    }
}

#[test]
fn a_tombstone_offers_restore_only_when_it_can_be_restored() {
    use EntryStatus as S;
    use TombstoneCause as C;
    let restore: &[AuditAction] = &[AuditAction::Restore];
    let table: [(Tombstone, &[AuditAction]); 9] = [
        (tomb(C::Evicted, None, Some(KEY)), restore),
        (tomb(C::Evicted, None, None), &[]),
        (tomb(C::Swept, Some(S::Pending), Some(KEY)), restore),
        (tomb(C::Swept, Some(S::Replayed), Some(KEY)), restore),
        (tomb(C::Swept, Some(S::Poisoned), Some(KEY)), restore),
        (tomb(C::Swept, Some(S::Archived), Some(KEY)), restore),
        (tomb(C::Swept, Some(S::Discarded), Some(KEY)), &[]),
        (tomb(C::Swept, None, Some(KEY)), restore),
        (tomb(C::Swept, Some(S::Replayed), None), &[]),
    ];
    for (t, want) in table {
        assert_eq!(tombstone_actions(&t), want, "{t:?}");
        // The same rule the route applies, with room in the store.
        assert_eq!(plan_restore(&t, 0, 10).is_ok(), !want.is_empty(), "{t:?}");
    }
}

#[test]
fn the_capacity_refusal_names_the_capacity() {
    let r = plan_restore(
        &tomb(TombstoneCause::Evicted, None, Some(KEY)),
        10_000,
        10_000,
    )
    .unwrap_err();
    assert!(
        r.message().contains("DLQ_CAPACITY 10000"),
        "{}",
        r.message()
    );
}

#[test]
fn the_restored_row_is_the_archived_one_with_its_new_status() {
    let original = json!({"id": "dlq_1", "status": "pending", "content_hash": "h", "envelope": "{\"a\":1}", "created_at": 1, "resolved_at": null});
    let text = encode_rows(&[original.as_object().unwrap().clone()]);
    let plan = plan_restore(&tomb(TombstoneCause::Evicted, None, Some(KEY)), 0, 10).unwrap();
    let row = restored_row(&plan, "dlq_1", &text, 50).unwrap();
    let mut want = original.clone();
    want["restored_at"] = json!(50);
    assert_eq!(
        serde_json::Value::Object(row),
        want,
        "an evicted entry equals the original, with when it was restored (its place in the eviction order)"
    );
    let swept = RestorePlan {
        status: EntryStatus::Archived,
        key: KEY.into(),
    };
    let back = restored_row(&swept, "dlq_1", &text, 50).unwrap();
    assert_eq!(
        (back["status"].as_str(), back["resolved_at"].as_i64()),
        (Some("archived"), Some(50))
    );
    assert!(restored_row(&plan, "dlq_2", &text, 50)
        .unwrap_err()
        .contains("no entry dlq_2"));
    assert!(restored_row(&plan, "dlq_1", "not json", 50).is_err());
    let discarded = text.replace("\"pending\"", "\"discarded\"");
    assert!(restored_row(&plan, "dlq_1", &discarded, 50).is_err());
}

#[test]
fn only_a_pending_restore_joins_an_identical_pending_entry() {
    assert_eq!(
        dedupe(EntryStatus::Pending, Some("dlq_9")),
        RestoreWrite::JoinExisting {
            existing_id: "dlq_9".into()
        }
    );
    assert_eq!(dedupe(EntryStatus::Pending, None), RestoreWrite::Insert);
    assert_eq!(
        dedupe(EntryStatus::Archived, Some("dlq_9")),
        RestoreWrite::Insert
    );
}

#[test]
fn a_discard_erases_the_envelope_and_the_payload_copies() {
    let keys: Vec<String> = archived_copies("dlq_1", 1_796_300_000_000)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(keys, [KEY, "payloads/2026-12-03/dlq_1.ndjson"]);
}

#[test]
fn a_write_that_changed_nothing_is_a_race_naming_what_changed_and_what_to_do() {
    let join = RestoreWrite::JoinExisting {
        existing_id: "dlq_twin".into(),
    };
    let table: [(&RestoreWrite, usize, Result<(), &str>); 4] = [
        (&RestoreWrite::Insert, 1, Ok(())),
        (&RestoreWrite::Insert, 0, Err("entry")),
        (&join, 1, Ok(())),
        (&join, 0, Err("twin")),
    ];
    for (write, changed, want) in table {
        let got = check_write("dlq_1", write, changed);
        match (got, want) {
            (Ok(()), Ok(())) => {}
            (Err(race), Err(which)) => {
                let m = race.message();
                assert!(m.contains("nothing was written"), "{m}");
                assert!(m.contains("GET /api/v1/admin/webhook-dlq/dlq_1"), "{m}");
                match which {
                    "twin" => assert!(
                        matches!(&race, RestoreRace::TwinChanged { twin, .. } if twin == "dlq_twin")
                            && m.contains("dlq_twin"),
                        "{m}"
                    ),
                    _ => assert_eq!(race, RestoreRace::EntryChanged { id: "dlq_1".into() }),
                }
            }
            (got, want) => panic!("{write:?} {changed}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn only_a_pending_restore_is_bounded_by_capacity_in_its_write() {
    let plan = |status| RestorePlan {
        status,
        key: KEY.into(),
    };
    assert_eq!(write_capacity(&plan(EntryStatus::Pending), 10), Some(10));
    for status in [
        EntryStatus::Replayed,
        EntryStatus::Archived,
        EntryStatus::Poisoned,
    ] {
        assert_eq!(write_capacity(&plan(status), 10), None, "{status:?}");
    }
}

#[test]
fn an_insert_that_changed_nothing_is_a_capacity_refusal_only_when_the_store_was_full() {
    let after = |pending, still_evicted| AfterWrite {
        pending,
        still_evicted,
    };
    let raced = || {
        Err(InsertRefused::Raced(RestoreRace::EntryChanged {
            id: "dlq_1".into(),
        }))
    };
    let full = |pending| {
        Err(InsertRefused::Refused(RestoreRefusal::AtCapacity {
            pending,
            capacity: 2,
        }))
    };
    let table = [
        // Written: whatever the store holds now.
        (Some(2), 1, after(3, false), Ok(())),
        (None, 1, after(9, false), Ok(())),
        // Not written, the entry still evicted, the store full: capacity.
        (Some(2), 0, after(2, true), full(2)),
        (Some(2), 0, after(5, true), full(5)),
        // Not written, but another restore (or a new dead letter) took it.
        (Some(2), 0, after(2, false), raced()),
        // Not written with room left: not the capacity guard.
        (Some(2), 0, after(1, true), raced()),
        // A resolved restore has no capacity guard.
        (None, 0, after(9, true), raced()),
    ];
    for (capacity, changed, after, want) in table {
        assert_eq!(
            check_insert("dlq_1", capacity, changed, after),
            want,
            "{capacity:?} {changed} {after:?}"
        );
    }
    let Err(InsertRefused::Refused(r)) = check_insert("dlq_1", Some(2), 0, after(2, true)) else {
        unreachable!()
    };
    assert_eq!(r.code(), "AT_CAPACITY");
    assert!(r.message().contains("DLQ_CAPACITY 2"), "{}", r.message());
}
