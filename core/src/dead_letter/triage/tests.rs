//! The triage plan's tests: dedupe against pending entries, redeliveries, and capacity evictions planned before one write.

use super::*;
use crate::state::StoreOutcome::{Deduped, Redelivered, Stored};

const NOW: UnixMillis = 5_000;

fn entry(id: &str, hash: &str) -> BatchEntry {
    BatchEntry {
        id: id.into(),
        content_hash: hash.into(),
    }
}

fn pending(id: &str, hash: &str, at: UnixMillis) -> PendingEntry {
    PendingEntry {
        id: id.into(),
        content_hash: hash.into(),
        created_at_ms: at,
    }
}

/// A store holding `rows` pending (all of them the oldest, all of them
/// matched by hash) plus `stored` in another status.
fn store(rows: &[PendingEntry], stored: &[&str]) -> StoreSnapshot {
    StoreSnapshot {
        stored_ids: rows
            .iter()
            .map(|r| r.id.clone())
            .chain(stored.iter().map(|s| s.to_string()))
            .collect(),
        same_hash: rows.to_vec(),
        pending: rows.len() as u64,
        oldest: rows.to_vec(),
    }
}

/// The outcome letters of a plan: S stored, D deduped, R redelivered.
fn outcomes(plan: &TriagePlan) -> String {
    plan.entries
        .iter()
        .map(|e| match e.expect {
            Stored => 'S',
            Deduped => 'D',
            Redelivered => 'R',
        })
        .collect()
}

/// (what, batch, store, capacity, outcomes, evicted)
type Case = (
    &'static str,
    Vec<BatchEntry>,
    StoreSnapshot,
    u64,
    &'static str,
    Vec<&'static str>,
);

/// The cases of `each_message_is_planned_as_if_stored_on_its_own`.
fn planning_cases() -> Vec<Case> {
    let old = [pending("p1", "h1", 10), pending("p2", "h2", 20)];
    vec![
        (
            "new payloads are stored",
            vec![entry("a", "ha"), entry("b", "hb")],
            store(&[], &[]),
            10,
            "SS",
            vec![],
        ),
        (
            "two identical messages in one batch: the second marks the first seen again",
            vec![entry("a", "same"), entry("b", "same"), entry("c", "same")],
            store(&[], &[]),
            10,
            "SDD",
            vec![],
        ),
        (
            "a payload identical to a pending entry is deduped against it",
            vec![entry("a", "h1")],
            store(&old, &[]),
            10,
            "D",
            vec![],
        ),
        (
            "a DLQ message stored before changes nothing",
            vec![entry("p1", "h1"), entry("x", "hx")],
            store(&old, &[]),
            10,
            "RS",
            vec![],
        ),
        (
            "a replayed entry's redelivery is not stored again",
            vec![entry("r", "hr")],
            store(&[], &["r"]),
            10,
            "R",
            vec![],
        ),
        (
            "the same DLQ message twice in a batch is stored once",
            vec![entry("a", "ha"), entry("a", "ha")],
            store(&[], &[]),
            10,
            "SR",
            vec![],
        ),
    ]
}

/// The capacity cases of `each_message_is_planned_as_if_stored_on_its_own`.
fn capacity_cases() -> Vec<Case> {
    let old = [pending("p1", "h1", 10), pending("p2", "h2", 20)];
    vec![
        (
            "crossing capacity evicts the oldest pending, one per message past it",
            vec![entry("a", "ha"), entry("b", "hb"), entry("c", "hc")],
            store(&old, &[]),
            3,
            "SSS",
            vec!["p1", "p2"],
        ),
        (
            "a redelivery and a dedupe add nothing to the depth",
            vec![entry("p1", "h1"), entry("a", "h2")],
            store(&old, &[]),
            2,
            "RD",
            vec![],
        ),
        (
            "a capacity below the batch evicts this batch's own entries, lowest id first",
            vec![entry("c", "hc"), entry("a", "ha"), entry("b", "hb")],
            store(&[], &[]),
            1,
            "SSS",
            vec!["a", "b"],
        ),
        (
            "a payload whose twin was just evicted is stored again, as it would be alone",
            vec![entry("a", "ha"), entry("b", "h1")],
            store(&old, &[]),
            2,
            "SS",
            vec!["p1", "p2"],
        ),
    ]
}

#[test]
fn each_message_is_planned_as_if_stored_on_its_own() {
    for (what, batch, snapshot, capacity, want, evicted) in
        planning_cases().into_iter().chain(capacity_cases())
    {
        let plan = plan(&batch, &snapshot, capacity, NOW);
        assert_eq!(outcomes(&plan), want, "{what}");
        assert_eq!(plan.evict, evicted, "{what}");
    }
}

#[test]
fn an_insert_ignores_only_twins_evicted_before_it() {
    let old = [pending("p1", "h1", 10), pending("p2", "h2", 20)];
    let batch = [entry("a", "ha"), entry("b", "h1"), entry("c", "h2")];
    let plan = plan(&batch, &store(&old, &[]), 2, NOW);
    let writes: Vec<_> = plan.entries.iter().map(|e| e.write.clone()).collect();
    assert_eq!(
        writes,
        [
            EntryWrite::Insert { exempt: vec![] },
            EntryWrite::Insert {
                exempt: vec!["p1".into()]
            },
            EntryWrite::Insert {
                exempt: vec!["p2".into()]
            },
        ]
    );
    assert_eq!(plan.evict, ["p1", "p2", "a"]);
}

#[test]
fn a_deduped_message_keeps_its_twin_even_if_that_twin_is_evicted_later() {
    let old = [pending("p1", "h1", 10)];
    let batch = [entry("a", "h1"), entry("b", "hb")];
    let plan = plan(&batch, &store(&old, &[]), 1, NOW);
    assert_eq!(outcomes(&plan), "DS");
    assert_eq!(plan.entries[0].write, EntryWrite::MarkSeen);
    assert_eq!(plan.evict, ["p1"]);
}

#[test]
fn without_enough_known_oldest_entries_the_plan_evicts_what_it_knows() {
    let snapshot = StoreSnapshot {
        pending: 50,
        oldest: vec![pending("p1", "h1", 10)],
        ..StoreSnapshot::default()
    };
    let plan = plan(&[entry("a", "ha")], &snapshot, 10, NOW);
    assert_eq!(plan.evict, ["p1"], "the rest is the follow-up's");
}

#[test]
fn settling_reads_each_outcome_from_its_changed_rows() {
    let batch = [entry("a", "ha"), entry("b", "ha"), entry("r", "hr")];
    let plan = plan(&batch, &store(&[], &["r"]), 10, NOW);
    use Settled::{Done, Unsettled};
    // (changes per message, or None when the write failed; settled)
    let table: [(Option<&[usize]>, [Settled; 3]); 4] = [
        (
            Some(&[1, 1, 0]),
            [Done(Stored), Done(Deduped), Done(Redelivered)],
        ),
        (
            Some(&[1, 3, 0]),
            [Done(Stored), Done(Deduped), Done(Redelivered)],
        ),
        (Some(&[0, 0, 0]), [Unsettled, Unsettled, Done(Redelivered)]),
        (None, [Unsettled, Unsettled, Unsettled]),
    ];
    for (changes, want) in table {
        assert_eq!(settle(&plan, changes), want, "{changes:?}");
    }
}

#[test]
fn the_follow_up_evicts_only_what_the_write_left_past_capacity() {
    use Settled::{Done, Unsettled};
    let snapshot = StoreSnapshot {
        pending: 50,
        ..StoreSnapshot::default()
    };
    // (settled, evicted by the write, capacity, follow-up)
    let table: [(&[Settled], usize, u64, u64); 4] = [
        (&[Done(Stored), Done(Stored)], 2, 50, 0),
        (&[Done(Stored), Done(Stored)], 1, 10, 41),
        (&[Done(Deduped), Done(Redelivered), Unsettled], 0, 50, 0),
        (&[Done(Stored)], 0, 100, 0),
    ];
    for (settled, evicted, capacity, want) in table {
        assert_eq!(
            evictions_after(&snapshot, settled, evicted, capacity),
            want,
            "{settled:?} {evicted} {capacity}"
        );
    }
}

#[test]
fn a_failed_write_is_tried_again_message_by_message_unless_the_batch_is_one() {
    for (len, split) in [(0, false), (1, false), (2, true), (100, true)] {
        assert_eq!(split_after_failed_write(len), split, "{len}");
    }
}
