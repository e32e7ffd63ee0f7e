//! What a capacity eviction archives: the entry's row and its claim-checked body, under their keys.

use super::*;
use crate::retention::ndjson::decode_rows;
use serde_json::json;

fn row(v: Value) -> Row {
    v.as_object().expect("a test row is an object").clone()
}

const DAY: i64 = 1_796_300_000_000; // 2026-12-03

fn entry(id: &str, body_ref: Option<&str>) -> Row {
    let envelope = json!({"id": id, "input": {"body_ref": body_ref, "content_hash": "h"}});
    row(
        json!({"id": id, "status": "pending", "created_at": DAY, "seen_count": 2,
               "envelope": envelope.to_string()}),
    )
}

#[test]
fn an_entry_is_archived_whole_under_its_entry_key_with_its_payload_beside_it() {
    let payload = row(
        json!({"event_id": "evt_9", "source": "s", "body": "{\"big\":1}",
                             "body_bytes": 9, "created_at": DAY}),
    );
    let other = row(
        json!({"event_id": "evt_other", "source": "s", "body": "x", "body_bytes": 1, "created_at": DAY}),
    );
    let table = [
        (
            "an inline entry: one object",
            entry("dlq_a", None),
            vec!["dead_letters/2026-12-03/dlq_a.ndjson"],
        ),
        (
            "a claim-checked entry: its payload beside it",
            entry("dlq_b", Some("evt_9")),
            vec![
                "dead_letters/2026-12-03/dlq_b.ndjson",
                "payloads/2026-12-03/dlq_b.ndjson",
            ],
        ),
        (
            "a payload no longer in D1: the envelope alone",
            entry("dlq_c", Some("evt_gone")),
            vec!["dead_letters/2026-12-03/dlq_c.ndjson"],
        ),
    ];
    for (what, e, keys) in table {
        let got =
            entry_archives(std::slice::from_ref(&e), &[other.clone(), payload.clone()]).unwrap();
        assert_eq!(got.len(), 1, "{what}");
        assert_eq!(got[0].key, keys[0], "{what}");
        assert_eq!(
            got[0]
                .objects
                .iter()
                .map(|o| o.key.as_str())
                .collect::<Vec<_>>(),
            keys,
            "{what}"
        );
        assert_eq!(
            decode_rows(&got[0].objects[0].text).unwrap(),
            vec![e.clone()],
            "{what}: the row whole"
        );
        if keys.len() == 2 {
            assert_eq!(
                decode_rows(&got[0].objects[1].text).unwrap(),
                vec![payload.clone()],
                "{what}"
            );
        }
    }
}

#[test]
fn a_row_without_a_key_is_an_error_not_skipped() {
    for (bad, says) in [
        (row(json!({"created_at": DAY})), "no text id"),
        (
            row(json!({"id": "dlq_x", "created_at": "soon"})),
            "dlq_x has no integer created_at",
        ),
    ] {
        let e = entry_archives(&[entry("dlq_ok", None), bad], &[]).unwrap_err();
        assert!(e.contains(says), "{e}");
    }
}

#[test]
fn a_restore_writes_only_columns_the_table_has() {
    let e = entry("dlq_a", None);
    assert_eq!(
        insert_columns(&e, &DEAD_LETTER_COLUMNS).unwrap(),
        ["created_at", "envelope", "id", "seen_count", "status"]
    );
    let bad = row(json!({"id": "x", "status = 'pending'; --": 1}));
    let err = insert_columns(&bad, &DEAD_LETTER_COLUMNS).unwrap_err();
    assert!(err.contains("status = 'pending'"), "{err}");
}

#[test]
fn the_sql_and_the_rust_find_an_entrys_payload_by_the_same_field() {
    let e = entry("dlq_1", Some("evt_9"));
    // The JSON path the SQL reads, as a pointer into the same envelope.
    let path = BODY_REF_SQL
        .split_once("'$.")
        .and_then(|(_, rest)| rest.split_once('\''))
        .map(|(p, _)| format!("/{}", p.replace('.', "/")))
        .unwrap();
    let envelope: Value = serde_json::from_str(e["envelope"].as_str().unwrap()).unwrap();
    assert_eq!(
        envelope.pointer(&path).and_then(Value::as_str),
        Some("evt_9")
    );
    assert_eq!(body_ref(&e).as_deref(), Some("evt_9"));
}
