//! The archive's overwrite invariant, checked over generated histories: a
//! put overwrites an object only while every row that object held is still
//! in D1. Rows turn unsweepable between a chunk's read and its delete (a
//! replay, a late attempt: first, last or middle rows alike), turn
//! sweepable again later, and runs crash between their puts and their
//! delete; D1 and R2 are modelled as maps, and the delete keeps what the
//! real guarded delete keeps. A fixed-seed generator makes every case
//! repeatable.

use super::*;
use std::collections::{BTreeMap, BTreeSet};

/// xorshift64*: enough to vary histories, seeded per case.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// One event row in the model of D1.
#[derive(Clone, Copy)]
struct ModelRow {
    at: UnixMillis,
    sweepable: bool,
}

struct World {
    rng: Rng,
    d1: BTreeMap<String, ModelRow>,
    r2: BTreeMap<String, BTreeSet<String>>,
    journal: Option<Chunk>,
    chunk_seq: u64,
    every_id: BTreeSet<String>,
    now: UnixMillis,
    overwrites: u32,
}

impl World {
    fn new(seed: u64) -> World {
        World {
            rng: Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1),
            d1: BTreeMap::new(),
            r2: BTreeMap::new(),
            journal: None,
            chunk_seq: 0,
            every_id: BTreeSet::new(),
            now: NOW,
            overwrites: 0,
        }
    }

    /// A few old events on a few days, some already in flight.
    fn insert_rows(&mut self) {
        let n = 1 + self.rng.below(6);
        for _ in 0..n {
            let day = 40 + self.rng.below(3) as i64;
            let at = self.now - day * DAY + self.rng.below(1000) as i64;
            let id = format!("evt_{:04}", self.every_id.len());
            let sweepable = self.rng.chance(80);
            self.every_id.insert(id.clone());
            self.d1.insert(id, ModelRow { at, sweepable });
        }
    }

    /// The candidate read: sweepable rows before the cutoff, oldest first.
    fn candidates(&self, q: &ChunkQuery) -> Vec<Candidate> {
        if q.table != ArchiveTable::Events {
            return Vec::new();
        }
        let mut rows: Vec<(&String, &ModelRow)> = self
            .d1
            .iter()
            .filter(|(_, r)| r.sweepable && r.at < q.before)
            .collect();
        rows.sort_by(|a, b| (a.1.at, a.0).cmp(&(b.1.at, b.0)));
        rows.into_iter()
            .take(q.limit)
            .map(|(id, r)| Candidate {
                id: id.clone(),
                at: r.at,
                bytes: 10,
                linked: false,
            })
            .collect()
    }

    fn answer(&self, qs: &[ChunkQuery]) -> Vec<Candidates> {
        qs.iter().map(|q| (q.clone(), self.candidates(q))).collect()
    }

    /// One run; answers whether it crashed.
    fn run(&mut self, crash_percent: u64) -> bool {
        let mut run = SweepRun::start(self.now, cfg(), 0, self.journal.clone(), 1_000);
        loop {
            let chunk = match run.next_step() {
                Step::Finished(_) => return false,
                Step::Read(qs) => {
                    let sets = self.answer(&qs);
                    run.read(sets);
                    continue;
                }
                Step::Redo(chunk) => chunk,
                Step::Move(mut chunk) => {
                    // The journal's write numbers the chunk.
                    self.chunk_seq += 1;
                    chunk.seq = Some(self.chunk_seq);
                    self.journal = Some(chunk.clone());
                    chunk
                }
            };
            self.put(&chunk);
            // Rows turn in flight between the read and the delete, any of
            // them: the first, the last, the middle.
            for row in &chunk.rows {
                if self.rng.chance(25) {
                    if let Some(r) = self.d1.get_mut(&row.id) {
                        r.sweepable = false;
                    }
                }
            }
            if self.rng.chance(crash_percent) {
                return true;
            }
            // The guarded delete: only rows still sweepable go.
            for row in &chunk.rows {
                if self.d1.get(&row.id).is_some_and(|r| r.sweepable) {
                    self.d1.remove(&row.id);
                }
            }
            self.journal = None;
            let written = Written {
                rows: vec![(ArchiveTable::Events, chunk.rows.len() as u64)],
                objects: 1,
                extra_calls: 0,
                size_after: 0,
            };
            let ahead = run.read_ahead(&chunk, 1);
            run.done(&chunk, &written);
            let sets = self.answer(&ahead);
            run.read(sets);
            self.assert_nothing_lost();
        }
    }

    /// Puts the chunk's rows still in D1 under each of its keys, checking
    /// the invariant first.
    fn put(&mut self, chunk: &Chunk) {
        let rows: BTreeSet<String> = chunk
            .rows
            .iter()
            .filter(|r| self.d1.contains_key(&r.id))
            .map(|r| r.id.clone())
            .collect();
        for key in chunk.keys() {
            let key = key.to_string();
            if let Some(old) = self.r2.get(&key) {
                self.overwrites += 1;
                let gone: Vec<&String> =
                    old.iter().filter(|id| !self.d1.contains_key(*id)).collect();
                assert!(
                    gone.is_empty(),
                    "{key} is overwritten while {gone:?}, which it held, are no longer in D1"
                );
            }
            self.r2.insert(key, rows.clone());
        }
    }

    fn assert_nothing_lost(&self) {
        for id in &self.every_id {
            let kept = self.d1.contains_key(id)
                || self
                    .r2
                    .iter()
                    .any(|(k, rows)| k.starts_with("events/") && rows.contains(id));
            assert!(kept, "{id} is in neither D1 nor the archive");
        }
    }
}

#[test]
fn a_put_overwrites_an_object_only_while_every_row_it_held_is_still_in_d1() {
    let mut overwrites = 0;
    for seed in 0..300 {
        let mut w = World::new(seed);
        for round in 0..12 {
            w.insert_rows();
            let crashed = w.run(if round % 3 == 2 { 0 } else { 20 });
            // In-flight rows settle at random; a crash's journal is redone.
            for r in w.d1.values_mut() {
                if !r.sweepable && w.rng.chance(50) {
                    r.sweepable = true;
                }
            }
            if !crashed {
                assert!(w.journal.is_none());
            }
            w.now += 60_000;
        }
        // Everything settles: the sweep empties D1 into the archive.
        for r in w.d1.values_mut() {
            r.sweepable = true;
        }
        for _ in 0..50 {
            if w.d1.is_empty() && w.journal.is_none() {
                break;
            }
            w.run(0);
            for r in w.d1.values_mut() {
                r.sweepable = true;
            }
        }
        assert!(
            w.d1.is_empty(),
            "seed {seed}: D1 is swept once nothing is in flight"
        );
        w.assert_nothing_lost();
        overwrites += w.overwrites;
    }
    assert!(overwrites > 0, "the histories include redone chunks");
}
