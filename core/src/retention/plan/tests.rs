//! The sweep's plan, case by case: age and size rules, chunks, the journal and the budget.

use super::*;

const NOW: UnixMillis = 1_796_300_000_000; // 2026-12-03 12:13 UTC
const DAY: i64 = 86_400_000;

fn cfg() -> RetentionConfig {
    RetentionConfig {
        event_retention_ms: 30 * DAY,
        dlq_retention_ms: 90 * DAY,
        d1_max_bytes: 1_000,
    }
}

/// An event candidate (the read returns only sweepable ones).
fn event(id: &str, age_days: i64) -> Candidate {
    Candidate {
        id: id.into(),
        at: NOW - age_days * DAY,
        bytes: 100,
        linked: false,
    }
}

fn ids(chunk: &Option<Chunk>) -> Vec<&str> {
    chunk
        .iter()
        .flat_map(|c| c.rows.iter().map(|r| r.id.as_str()))
        .collect()
}

/// The first query of the next step, which must be a read.
fn read(run: &mut SweepRun) -> ChunkQuery {
    match run.next_step() {
        Step::Read(qs) => qs[0].clone(),
        other => panic!("expected a read, got {other:?}"),
    }
}

/// A query for events by the age rule, before `before`.
fn events_by_age(before: UnixMillis) -> ChunkQuery {
    ChunkQuery {
        table: ArchiveTable::Events,
        rule: SweepRule::Age,
        column: "ingested_at",
        before,
        limit: EVENT_CHUNK_ROWS,
    }
}

/// What moving every row of the events chunk `c` wrote.
fn moved(c: &Chunk, objects: u32, size_after: u64) -> Written {
    Written {
        rows: vec![(ArchiveTable::Events, c.rows.len() as u64)],
        objects,
        extra_calls: 0,
        size_after,
    }
}

/// Answers each query with nothing.
fn nothing(qs: Vec<ChunkQuery>) -> Vec<Candidates> {
    qs.into_iter().map(|q| (q, Vec::new())).collect()
}

#[test]
fn the_age_rule_takes_events_older_than_event_retention() {
    let mut run = SweepRun::start(NOW, cfg(), 500, None, DEFAULT_SUBREQUEST_BUDGET);
    let q = read(&mut run);
    assert_eq!(
        (q.table, q.rule, q.before),
        (ArchiveTable::Events, SweepRule::Age, NOW - 30 * DAY)
    );
    let candidates = [
        event("old-a", 40),
        event("old-b", 40),
        event("old-c", 40),
        event("young", 29),
    ];
    let chunk = run.select(&q, &candidates);
    assert_eq!(ids(&chunk), ["old-a", "old-b", "old-c"]);
    assert!(
        chunk.unwrap().exhausted,
        "fewer candidates than the limit: the table is done"
    );
}

#[test]
fn above_the_cap_the_oldest_sweepable_events_go_whatever_their_age() {
    let mut run = SweepRun::start(NOW, cfg(), 5_000, None, DEFAULT_SUBREQUEST_BUDGET);
    let q = read(&mut run);
    assert_eq!((q.rule, q.before), (SweepRule::Size, NOW + 1));
    let candidates = [event("today", 0)];
    let chunk = run.select(&q, &candidates).unwrap();
    assert_eq!(chunk.rows[0].id, "today");
    assert_eq!(chunk.before, Some(NOW + 1), "the delete guard's cutoff");
    // As if more candidates had been left behind it.
    let chunk = Chunk {
        exhausted: false,
        ..chunk
    };
    run.done(
        &chunk,
        &Written {
            rows: vec![(ArchiveTable::Events, 1)],
            objects: 1,
            extra_calls: 0,
            size_after: 900,
        },
    );
    assert_eq!(
        run.next_step(),
        Step::Read(vec![ChunkQuery {
            rule: SweepRule::Age,
            before: NOW - 30 * DAY,
            ..q
        }]),
        "under the cap again: back to the age rule"
    );
}

#[test]
fn a_size_rule_that_does_not_lower_the_size_stops_for_the_run() {
    let mut run = SweepRun::start(NOW, cfg(), 5_000, None, DEFAULT_SUBREQUEST_BUDGET);
    let q = read(&mut run);
    let chunk = run
        .select(&q, &[event("a", 1)])
        .map(|c| Chunk {
            exhausted: false,
            ..c
        })
        .unwrap();
    run.done(
        &chunk,
        &Written {
            rows: vec![(ArchiveTable::Events, 1)],
            objects: 1,
            extra_calls: 0,
            size_after: 5_000,
        },
    );
    assert_eq!(read(&mut run).rule, SweepRule::Age);
    let Step::Finished(report) = drain(&mut run) else {
        unreachable!()
    };
    assert!(report.size_unresponsive);
    assert_eq!(report.size_swept_through, Some(NOW - DAY));
}

/// Answers every read with nothing until the run finishes.
fn drain(run: &mut SweepRun) -> Step {
    loop {
        match run.next_step() {
            Step::Read(qs) => run.read(nothing(qs)),
            other => return other,
        }
    }
}

#[test]
fn a_chunk_never_spans_two_utc_days_nor_passes_its_row_and_byte_bounds() {
    let run = SweepRun::start(NOW, cfg(), 0, None, DEFAULT_SUBREQUEST_BUDGET);
    let q = events_by_age(NOW);
    let midnight = NOW - NOW.rem_euclid(DAY);
    let two_days = [
        Candidate {
            at: midnight - 1,
            ..event("late", 0)
        },
        Candidate {
            at: midnight,
            ..event("early", 0)
        },
    ];
    let c = run.select(&q, &two_days);
    assert_eq!(ids(&c), ["late"]);
    assert!(
        !c.unwrap().exhausted,
        "the next day is left for the next chunk"
    );
    let many: Vec<Candidate> = (0..EVENT_CHUNK_ROWS + 5)
        .map(|i| Candidate {
            id: format!("e{i:04}"),
            at: midnight + i as i64,
            ..event("", 0)
        })
        .collect();
    let c = run.select(&q, &many).unwrap();
    assert_eq!(c.rows.len(), EVENT_CHUNK_ROWS);
    assert!(c
        .id_groups()
        .iter()
        .all(|g| g.len() <= MAX_IDS_PER_STATEMENT));
    assert_eq!(c.id_groups().len(), 5);
}

#[test]
fn a_chunk_stops_at_its_byte_bound_but_always_takes_its_first_row() {
    let run = SweepRun::start(NOW, cfg(), 0, None, DEFAULT_SUBREQUEST_BUDGET);
    let q = events_by_age(NOW + 1);
    let midnight = NOW - NOW.rem_euclid(DAY);
    let big: Vec<Candidate> = (0..3)
        .map(|i| Candidate {
            id: format!("b{i}"),
            bytes: MAX_CHUNK_BYTES / 2,
            at: midnight + i,
            ..event("", 0)
        })
        .collect();
    assert_eq!(run.select(&q, &big).unwrap().rows.len(), 2);
    let huge = [Candidate {
        bytes: 2 * MAX_CHUNK_BYTES,
        ..event("huge", 0)
    }];
    let first = run.select(&q, &huge).unwrap();
    assert_eq!(first.rows.len(), 1, "the first row always fits");
}

#[test]
fn every_table_is_visited_in_order_once_each() {
    let mut run = SweepRun::start(NOW, cfg(), 0, None, 1_000);
    let (mut visited, mut reads) = (Vec::new(), 0);
    let report = loop {
        let qs = match run.next_step() {
            Step::Read(qs) => qs,
            Step::Finished(r) => break r,
            other => panic!("nothing to move, got {other:?}"),
        };
        reads += 1;
        visited.extend(qs.iter().map(|q| q.table));
        for q in &qs {
            if q.table == ArchiveTable::DeadLetters {
                assert_eq!(q.limit, ENTRY_CHUNK_ROWS);
            }
        }
        run.read(nothing(qs));
    };
    let want: Vec<ArchiveTable> = age_rules(&cfg()).iter().map(|r| r.table).collect();
    assert_eq!(visited, want);
    assert_eq!(reads, 2, "the events, then every other table in one batch");
    assert!(!report.more && report.archived.is_empty());
}

fn full(q: &ChunkQuery) -> Vec<Candidate> {
    (0..q.limit)
        .map(|i| Candidate {
            id: format!("e{i:04}"),
            at: NOW - 40 * DAY,
            ..event("", 0)
        })
        .collect()
}

#[test]
fn a_run_stops_at_its_budget_and_says_more_is_left() {
    let mut run = SweepRun::start(NOW, cfg(), 0, None, DEFAULT_SUBREQUEST_BUDGET);
    let (mut chunks, mut reads) = (0, 0);
    let report = loop {
        match run.next_step() {
            Step::Read(qs) => {
                reads += 1;
                run.read(qs.iter().map(|q| (q.clone(), full(q))).collect());
            }
            Step::Move(c) => {
                assert!(!c.exhausted);
                let ahead = run.read_ahead(&c, 4);
                // The next chunk of events rides in the delete, unless the
                // budget ends the run first.
                assert!(ahead.len() <= 1 && ahead.iter().all(|q| q.table == c.table));
                run.done(&c, &moved(&c, 4, 0));
                run.read(ahead.iter().map(|q| (q.clone(), full(q))).collect());
                chunks += 1;
            }
            Step::Finished(r) => break r,
            Step::Redo(_) => unreachable!(),
        }
    };
    assert!(report.more);
    assert_eq!(reads, 1, "one read, then each chunk reads the next ahead");
    assert_eq!(
        chunks,
        (DEFAULT_SUBREQUEST_BUDGET - CALLS_PER_READ) / (CALLS_PER_CHUNK + 4)
    );
    assert_eq!(
        report.archived,
        [(
            ArchiveTable::Events,
            (chunks as usize * EVENT_CHUNK_ROWS) as u64
        )]
    );
    assert_eq!(report.objects_written, 4 * chunks);
}

#[test]
fn the_last_chunk_of_a_table_reads_the_tables_after_it_ahead() {
    let mut run = SweepRun::start(NOW, cfg(), 0, None, DEFAULT_SUBREQUEST_BUDGET);
    let Step::Read(qs) = run.next_step() else {
        panic!("a run starts with a read")
    };
    run.read(vec![(qs[0].clone(), vec![event("last", 40)])]);
    let Step::Move(c) = run.next_step() else {
        panic!("one event to move")
    };
    assert!(c.exhausted);
    let ahead = run.read_ahead(&c, 1);
    let tables: Vec<ArchiveTable> = ahead.iter().map(|q| q.table).collect();
    let want: Vec<ArchiveTable> = age_rules(&cfg())[1..].iter().map(|r| r.table).collect();
    assert_eq!(tables, want);
    run.done(
        &c,
        &Written {
            rows: vec![(ArchiveTable::Events, 1)],
            objects: 1,
            extra_calls: 0,
            size_after: 0,
        },
    );
    run.read(nothing(ahead));
    let Step::Finished(report) = run.next_step() else {
        panic!("every table was read ahead and holds nothing")
    };
    assert!(!report.more, "nothing is left: the run says so at once");
}

#[test]
fn candidates_read_for_another_query_are_not_used() {
    // Above the cap, the size rule's read ahead; the chunk brings the size
    // under it, so the next query is the age rule's and is read afresh.
    let mut run = SweepRun::start(NOW, cfg(), 5_000, None, DEFAULT_SUBREQUEST_BUDGET);
    let q = read(&mut run);
    run.read(vec![(q.clone(), full(&q))]);
    let Step::Move(c) = run.next_step() else {
        panic!("a chunk to move")
    };
    let ahead = run.read_ahead(&c, 1);
    assert_eq!(ahead[0].rule, SweepRule::Size);
    run.done(&c, &moved(&c, 1, 900));
    run.read(ahead.iter().map(|q| (q.clone(), full(q))).collect());
    assert_eq!(read(&mut run).rule, SweepRule::Age);
}

/// A chunk of two events, numbered 12, as a journal holds it.
fn two_events() -> Chunk {
    Chunk {
        table: ArchiveTable::Events,
        rule: SweepRule::Age,
        rows: vec![
            ChunkRow {
                id: "evt_a".into(),
                at: NOW,
            },
            ChunkRow {
                id: "evt_b".into(),
                at: NOW,
            },
        ],
        exhausted: true,
        linked: true,
        seq: Some(12),
        before: Some(NOW),
    }
}

#[test]
fn a_journal_left_by_a_crash_is_redone_first_with_the_same_keys() {
    let chunk = two_events();
    let stored = serde_json::to_string(&chunk).unwrap();
    let journal: Chunk = serde_json::from_str(&stored).unwrap();
    assert_eq!(journal, chunk);
    let mut run = SweepRun::start(NOW, cfg(), 0, Some(journal), DEFAULT_SUBREQUEST_BUDGET);
    let Step::Redo(redo) = run.next_step() else {
        panic!("the journal comes first")
    };
    assert_eq!(redo.keys(), chunk.keys());
    let keys: Vec<String> = redo.keys().iter().map(ToString::to_string).collect();
    assert_eq!(
        keys,
        [
            "events/2026-12-03/evt_a~evt_b~12.ndjson",
            "attempts/2026-12-03/evt_a~evt_b~12.ndjson",
            "payloads/2026-12-03/evt_a~evt_b~12.ndjson",
            "event_steps/2026-12-03/evt_a~evt_b~12.ndjson",
            "deliveries/2026-12-03/evt_a~evt_b~12.ndjson",
        ]
    );
    run.done(
        &redo,
        &Written {
            rows: vec![(ArchiveTable::Events, 2)],
            objects: 1,
            extra_calls: 0,
            size_after: 0,
        },
    );
    assert_eq!(
        read(&mut run).table,
        ArchiveTable::Events,
        "a redo does not skip the events phase"
    );
}

#[test]
fn a_journal_from_before_the_newer_fields_keeps_its_keys_and_reads_every_table() {
    let stored = serde_json::to_string(&two_events()).unwrap();
    let older = stored.replace(",\"linked\":true,\"seq\":12,\"before\":1796300000000", "");
    let older: Chunk = serde_json::from_str(&older).unwrap();
    assert!(
        older.linked,
        "a journal from before the linked check reads and deletes the linked tables"
    );
    assert_eq!(
        older.keys()[0].to_string(),
        "events/2026-12-03/evt_a~evt_b.ndjson",
        "a journal from before chunk numbers redoes the keys it wrote then"
    );
    assert_eq!(older.before, None);
}

#[test]
fn dead_letter_chunks_write_one_object_per_entry() {
    let chunk = Chunk {
        table: ArchiveTable::DeadLetters,
        rule: SweepRule::Age,
        rows: vec![
            ChunkRow {
                id: "dlq_1".into(),
                at: NOW,
            },
            ChunkRow {
                id: "dlq_2".into(),
                at: NOW - DAY,
            },
        ],
        exhausted: false,
        linked: false,
        seq: Some(3),
        before: None,
    };
    let keys: Vec<String> = chunk.keys().iter().map(ToString::to_string).collect();
    assert_eq!(
        keys,
        [
            "dead_letters/2026-12-03/dlq_1.ndjson",
            "dead_letters/2026-12-02/dlq_2.ndjson"
        ]
    );
}

#[test]
fn the_dedupe_window_shortens_only_while_the_size_rule_swept_young_events() {
    let table = [
        (None, 30 * DAY),
        (Some(NOW - 2 * DAY), 2 * DAY),
        (Some(NOW - 31 * DAY), 30 * DAY),
        (Some(NOW + 5), 0),
    ];
    for (through, want) in table {
        assert_eq!(
            effective_dedupe_window_ms(NOW, 30 * DAY, through),
            want,
            "{through:?}"
        );
    }
}

#[test]
fn a_chunk_is_linked_when_any_of_its_rows_is() {
    let run = SweepRun::start(NOW, cfg(), 0, None, DEFAULT_SUBREQUEST_BUDGET);
    let q = events_by_age(NOW);
    let plain = event("plain", 40);
    let with_attempts = Candidate {
        linked: true,
        ..event("with-attempts", 40)
    };
    let table = [
        (vec![plain.clone()], false),
        (vec![plain.clone(), with_attempts.clone()], true),
        (vec![with_attempts], true),
    ];
    for (candidates, want) in table {
        let chunk = run.select(&q, &candidates).unwrap();
        assert_eq!(chunk.linked, want, "{candidates:?}");
    }
}

#[test]
fn a_missing_size_is_an_error_never_a_zero() {
    assert_eq!(size_after(&[Some(900), None, Some(800), None]), Ok(800));
    assert_eq!(size_after(&[Some(0)]), Ok(0), "a real 0 stays 0");
    for none in [&[][..], &[None, None][..]] {
        let err = size_after(none).unwrap_err();
        assert!(err.contains("meta.size_after"), "{err}");
    }
}

mod overwrite;

#[test]
fn an_events_chunk_puts_its_deliveries_beside_it_and_a_run_budgets_for_that_object() {
    // Events, attempts, payloads, steps and deliveries: five objects.
    let mut chunk = two_events();
    chunk.seq = Some(3);
    let tables: Vec<ArchiveTable> = chunk.keys().iter().map(|k| k.table).collect();
    assert_eq!(
        tables,
        [
            ArchiveTable::Events,
            ArchiveTable::Attempts,
            ArchiveTable::Payloads,
            ArchiveTable::EventSteps,
            ArchiveTable::Deliveries
        ]
    );
    // A run starts an events chunk only with room for its read, its two
    // batches and all five puts.
    let fits = CALLS_PER_READ + CALLS_PER_CHUNK + 5;
    for (budget, reads) in [(fits, true), (fits - 1, false)] {
        let mut run = SweepRun::start(NOW, cfg(), 0, None, budget);
        match run.next_step() {
            Step::Read(_) => assert!(reads, "budget {budget}"),
            Step::Finished(report) => assert!(!reads && report.more, "budget {budget}"),
            other => panic!("budget {budget}: {other:?}"),
        }
    }
}
