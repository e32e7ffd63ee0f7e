//! Sweep planning: what one bounded run archives and deletes, chunk by
//! chunk, and whether work is left for the next run.
//!
//! The glue drives a [`SweepRun`]: `next_step()` answers a [`Step`]. For
//! `Read(queries)` the glue reads candidate rows (ids, times, states; no
//! bodies) for every query in one D1 batch, oldest first, and hands them to
//! `read`. For `Move(chunk)` (or `Redo(chunk)`) it writes the chunk to the
//! journal (`sweep_state.journal`) and reads its rows by id in one D1
//! batch, puts them to R2 under the chunk's keys, then deletes them, clears
//! the journal and reads the candidates `read_ahead` asks for, in one D1
//! batch; it calls `done` with `meta.size_after`, and `read` with those
//! candidates. So a chunk costs two D1 round trips, the same as a sweep
//! that skips the journal: the journal's write rides in the row read and
//! the next chunk's candidates ride in this chunk's delete. A run that
//! crashed between the put and the delete left the chunk in the journal;
//! the next run starts with `Redo(chunk)`, which rewrites the same keys and
//! deletes the same ids, so each row is archived once by key.
//!
//! **Keys never overwrite lost rows.** Each delete keeps the rows that
//! stopped being sweepable since the read (`tables::alone`), so part of a
//! chunk may stay in D1. Each new chunk therefore gets a number of its own
//! (`Chunk::seq`, from `sweep_state.chunk_seq`, stored with the journal),
//! and its keys carry it: only a redo of the same chunk rewrites an object,
//! and a redo finds every row of that object still in D1 (the delete that
//! would have removed any is the one that did not commit).
//!
//! Candidates read ahead are used only for the query they were read for:
//! when the size rule turns off between two chunks, the next query differs
//! and is read afresh. They are as fresh as a separate read would be (the
//! same batch as the previous delete, just before the next chunk).
//!
//! **Bounds.** A statement binds at most [`MAX_IDS_PER_STATEMENT`] ids (D1
//! allows 100 bound parameters and 100 KB of SQL; ids travel as
//! parameters, so the text stays a few hundred bytes). A chunk holds at
//! most [`EVENT_CHUNK_ROWS`] rows and about [`MAX_CHUNK_BYTES`] of bodies,
//! and never spans two UTC days (one object per table per chunk). A run
//! stops before it could pass its subrequest budget (every D1 call and R2
//! put counts), answering `more: true`; the sweep then continues through a
//! queue message or the next cron.
//!
//! **Size.** While `meta.size_after` is above `D1_MAX_BYTES`, events are
//! read with no age limit, oldest sweepable first. If a chunk's delete did
//! not lower the size (SQLite may keep freed pages), the size rule stops
//! for the rest of the run, so one run cannot empty the table chasing a
//! number that does not move; the `storage` alarm stays firing.

use super::archive_key::ArchiveKey;
use super::tables::{age_rules, linked, AgeRule};
use crate::retention::settings::RetentionConfig;
use crate::state::{ArchiveTable, SweepRule};
use crate::UnixMillis;
use serde::{Deserialize, Serialize};

/// Ids bound in one statement at most: D1 allows 100 parameters, and a
/// statement keeps a few for its own conditions.
pub const MAX_IDS_PER_STATEMENT: usize = 90;
/// Rows in a chunk of events (or other rows) at most.
pub const EVENT_CHUNK_ROWS: usize = 5 * MAX_IDS_PER_STATEMENT;
/// Dead-letter entries in a chunk at most: each is its own object (and a
/// payload object when claim-checked).
pub const ENTRY_CHUNK_ROWS: usize = 10;
/// Bytes of bodies in one chunk at most (the first row always fits).
pub const MAX_CHUNK_BYTES: u64 = 4_000_000;
/// Subrequests one run may spend, well inside the Workers free plan's 50.
pub const DEFAULT_SUBREQUEST_BUDGET: u32 = 40;
/// D1 calls per chunk: write the journal and read the rows (one batch),
/// delete, clear the journal and read ahead (one batch).
pub const CALLS_PER_CHUNK: u32 = 2;
/// D1 calls per read of candidates (one batch, whatever its queries).
pub const CALLS_PER_READ: u32 = 1;
const DAY_MS: i64 = 86_400_000;

/// What the glue reads next: candidates of `table` with `column < before`,
/// in the table's sweepable states, oldest first, at most `limit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkQuery {
    /// The table.
    pub table: ArchiveTable,
    /// Age or size.
    pub rule: SweepRule,
    /// The time column to compare and order by.
    pub column: &'static str,
    /// Only rows strictly before this.
    pub before: UnixMillis,
    /// How many candidates to read.
    pub limit: usize,
}

/// One candidate row, as the glue read it: old enough and sweepable by
/// `tables::alone`, which the read applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Its id (`event_id`, `id`, `destination`, …).
    pub id: String,
    /// Its time column.
    pub at: UnixMillis,
    /// Its body's bytes (0 for tables without bodies).
    pub bytes: u64,
    /// Whether rows of its linked tables may refer to it (the read checks
    /// for events; any other table with linked tables says true).
    pub linked: bool,
}

/// One row of a chunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkRow {
    /// Its id.
    pub id: String,
    /// Its time column (an entry's key uses its `created_at` instead; the
    /// glue passes that as `at` for dead letters).
    pub at: UnixMillis,
}

/// The rows one step moves; stored as the journal until deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    /// Their table.
    pub table: ArchiveTable,
    /// Why they go.
    pub rule: SweepRule,
    /// Oldest first, one UTC day.
    pub rows: Vec<ChunkRow>,
    /// No more candidates were left behind this chunk in its table.
    #[serde(default)]
    pub exhausted: bool,
    /// Whether any of its rows had linked rows when read. Without, the
    /// glue neither reads nor deletes the linked tables, and its delete
    /// keeps a row that gained linked rows since (archived again later,
    /// never lost). A journal written before this field says true.
    #[serde(default = "linked_unknown")]
    pub linked: bool,
    /// Its number, set when the journal is written (`sweep_state.chunk_seq`)
    /// and part of its range keys. A journal written before it has none,
    /// and its redo rewrites the keys it wrote then.
    #[serde(default)]
    pub seq: Option<u64>,
    /// The query's cutoff: a delete guard keeps any row whose time column
    /// has moved to or past it since the read. None in an older journal.
    #[serde(default)]
    pub before: Option<UnixMillis>,
}

fn linked_unknown() -> bool {
    true
}

impl Chunk {
    /// Every object this chunk writes: per entry for dead letters, else one
    /// range key for the table and one per linked table (the glue skips a
    /// linked object that has no rows).
    pub fn keys(&self) -> Vec<ArchiveKey> {
        if self.table == ArchiveTable::DeadLetters {
            return self
                .rows
                .iter()
                .map(|r| ArchiveKey::entry(&r.id, r.at))
                .collect();
        }
        let (first, last) = (&self.rows[0], &self.rows[self.rows.len() - 1]);
        let key = ArchiveKey::range(self.table, first.at, &first.id, &last.id, self.seq);
        let mut keys = vec![key.clone()];
        keys.extend(linked(self.table).iter().map(|t| key.sibling(*t)));
        keys
    }

    /// The ids, in groups that each fit one statement.
    pub fn id_groups(&self) -> Vec<Vec<&str>> {
        let ids: Vec<&str> = self.rows.iter().map(|r| r.id.as_str()).collect();
        ids.chunks(MAX_IDS_PER_STATEMENT)
            .map(<[&str]>::to_vec)
            .collect()
    }
}

/// What the glue did with a chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// Rows archived and deleted, per table (linked tables included).
    pub rows: Vec<(ArchiveTable, u64)>,
    /// R2 objects put.
    pub objects: u32,
    /// Subrequests beyond the chunk's two D1 batches and its puts (the
    /// rare clean-up after a guarded delete kept a dead letter).
    pub extra_calls: u32,
    /// `meta.size_after` of the delete batch.
    pub size_after: u64,
}

/// What a run did, for `maintenance/run` and `sweep_state`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Rows archived per table, in first-archived order.
    pub archived: Vec<(ArchiveTable, u64)>,
    /// R2 objects written.
    pub objects_written: u32,
    /// The run stopped at its budget with work left.
    pub more: bool,
    /// The newest `ingested_at` the size rule swept in this run.
    pub size_swept_through: Option<UnixMillis>,
    /// The database size after the run's last statement.
    pub size_bytes: u64,
    /// A size-rule delete did not lower the size.
    pub size_unresponsive: bool,
}

/// Candidates as read for one query.
pub type Candidates = (ChunkQuery, Vec<Candidate>);

/// The next thing to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Finish the journal's chunk first: read its rows by id, put, delete.
    Redo(Chunk),
    /// Read candidates for each query (one batch), then hand them to
    /// `SweepRun::read`.
    Read(Vec<ChunkQuery>),
    /// Move this chunk: journal and read its rows, put, delete.
    Move(Chunk),
    /// Stop; the report says whether work is left.
    Finished(SweepReport),
}

/// One bounded run of the sweep.
#[derive(Debug, Clone)]
pub struct SweepRun {
    now: UnixMillis,
    cfg: RetentionConfig,
    rules: [AgeRule; 9],
    phase: usize,
    spent: u32,
    budget: u32,
    journal: Option<Chunk>,
    /// Candidates from the last read, by query, not yet used.
    known: Vec<Candidates>,
    report: SweepReport,
}

impl SweepRun {
    /// A run at `now` over a database of `size_bytes` (from a cheap
    /// statement's `meta.size_after`), resuming `journal` if a previous run
    /// left one, spending at most `budget` subrequests.
    pub fn start(
        now: UnixMillis,
        cfg: RetentionConfig,
        size_bytes: u64,
        journal: Option<Chunk>,
        budget: u32,
    ) -> SweepRun {
        SweepRun {
            now,
            cfg,
            rules: age_rules(&cfg),
            phase: 0,
            spent: 0,
            budget,
            journal,
            known: Vec::new(),
            report: SweepReport {
                size_bytes,
                ..SweepReport::default()
            },
        }
    }

    /// Swept events are remembered (their id and archive key, so their
    /// story answers 200 with the key even with no entry in D1, DESIGN §4)
    /// for one `EVENT_RETENTION` after the sweep: the pointers of events
    /// swept before this instant are dropped with the next events chunk.
    pub fn swept_pointers_from(&self) -> UnixMillis {
        self.now - self.cfg.event_retention_ms
    }

    /// What to do next. A table whose candidates were read and hold
    /// nothing to move is done at no cost; a read is charged here.
    pub fn next_step(&mut self) -> Step {
        if let Some(mut chunk) = self.journal.take() {
            // A redo finishes old work; it says nothing about what is left.
            chunk.exhausted = false;
            return Step::Redo(chunk);
        }
        loop {
            let Some(rule) = self.rules.get(self.phase).copied() else {
                return Step::Finished(self.report.clone());
            };
            let q = self.query(rule);
            let Some(i) = self.known.iter().position(|(k, _)| *k == q) else {
                if self.spent + CALLS_PER_READ + max_cost(rule.table) > self.budget {
                    return self.out_of_budget();
                }
                self.spent += CALLS_PER_READ;
                return Step::Read(self.queries_from(self.phase));
            };
            let (q, candidates) = self.known.swap_remove(i);
            let Some(chunk) = self.select(&q, &candidates) else {
                self.phase += 1;
                continue;
            };
            // Read but not moved when over budget: the next run reads again.
            if self.spent + max_cost(q.table) > self.budget {
                return self.out_of_budget();
            }
            return Step::Move(chunk);
        }
    }

    fn out_of_budget(&mut self) -> Step {
        self.report.more = true;
        Step::Finished(self.report.clone())
    }

    /// The queries one read asks for from `phase` on: the events alone
    /// (their chunks come one after the other, each reading the next
    /// ahead), else every table left, whose candidates are few and read in
    /// one batch, so a run that finds little to do costs one round trip
    /// for all of them.
    fn queries_from(&self, phase: usize) -> Vec<ChunkQuery> {
        let rules = self.rules.get(phase..).unwrap_or_default();
        match rules.first() {
            Some(r) if r.table == ArchiveTable::Events => vec![self.query(*r)],
            _ => rules.iter().map(|r| self.query(*r)).collect(),
        }
    }

    fn query(&self, rule: AgeRule) -> ChunkQuery {
        let above_cap = self.report.size_bytes > self.cfg.d1_max_bytes;
        let by_size =
            rule.table == ArchiveTable::Events && above_cap && !self.report.size_unresponsive;
        ChunkQuery {
            table: rule.table,
            rule: if by_size {
                SweepRule::Size
            } else {
                SweepRule::Age
            },
            column: rule.column,
            before: if by_size {
                self.now + 1
            } else {
                rule.cutoff(self.now)
            },
            limit: if rule.table == ArchiveTable::DeadLetters {
                ENTRY_CHUNK_ROWS
            } else {
                EVENT_CHUNK_ROWS
            },
        }
    }

    /// Hands over the candidates read for a `Step::Read`, or read ahead in
    /// a chunk's delete batch; they replace any read before.
    pub fn read(&mut self, sets: Vec<Candidates>) {
        self.known = sets;
    }

    /// The candidates to read in `chunk`'s delete batch (at no extra round
    /// trip), after it put `objects`: the next chunk of its table, or, when
    /// the table is done, the tables after it. Nothing when the budget
    /// would stop the run before it could use them.
    pub fn read_ahead(&self, chunk: &Chunk, objects: u32) -> Vec<ChunkQuery> {
        let current = self.rules.get(self.phase).map(|r| r.table);
        if current != Some(chunk.table) {
            // A redo of a table this run is not at: the next step reads.
            return Vec::new();
        }
        let next = self.phase + usize::from(chunk.exhausted);
        let spent = self.spent + CALLS_PER_CHUNK + objects;
        match self.rules.get(next) {
            Some(r) if spent + max_cost(r.table) > self.budget => Vec::new(),
            // The same table again: its next chunk only.
            Some(r) if !chunk.exhausted => vec![self.query(*r)],
            Some(_) => self.queries_from(next),
            None => Vec::new(),
        }
    }

    /// The chunk to move from `candidates` (read for `q`, oldest first,
    /// each sweepable as read): those before `q.before`, within one UTC
    /// day, up to the row and byte bounds. `None` when there are none.
    pub fn select(&self, q: &ChunkQuery, candidates: &[Candidate]) -> Option<Chunk> {
        let max_rows = q.limit.min(EVENT_CHUNK_ROWS);
        let (mut rows, mut bytes, mut cut, mut linked) = (Vec::new(), 0_u64, false, false);
        for c in candidates {
            if c.at >= q.before {
                continue;
            }
            let other_day = rows
                .first()
                .is_some_and(|f: &ChunkRow| f.at.div_euclid(DAY_MS) != c.at.div_euclid(DAY_MS));
            if other_day
                || rows.len() == max_rows
                || (!rows.is_empty() && bytes + c.bytes > MAX_CHUNK_BYTES)
            {
                cut = true;
                break;
            }
            bytes += c.bytes;
            linked |= c.linked;
            rows.push(ChunkRow {
                id: c.id.clone(),
                at: c.at,
            });
        }
        if rows.is_empty() {
            return None;
        }
        Some(Chunk {
            table: q.table,
            rule: q.rule,
            rows,
            exhausted: !cut && candidates.len() < q.limit,
            linked,
            seq: None,
            before: Some(q.before),
        })
    }

    /// `chunk` was archived and deleted as `written` says.
    pub fn done(&mut self, chunk: &Chunk, written: &Written) {
        self.spent += CALLS_PER_CHUNK + written.objects + written.extra_calls;
        self.report.objects_written += written.objects;
        for (table, n) in &written.rows {
            match self.report.archived.iter_mut().find(|(t, _)| t == table) {
                Some((_, total)) => *total += n,
                None => self.report.archived.push((*table, *n)),
            }
        }
        if chunk.rule == SweepRule::Size {
            let newest = chunk.rows.iter().map(|r| r.at).max();
            self.report.size_swept_through = self.report.size_swept_through.max(newest);
            self.report.size_unresponsive = written.size_after >= self.report.size_bytes;
        }
        self.report.size_bytes = written.size_after;
        let current = self.rules.get(self.phase).map(|r| r.table);
        if chunk.exhausted && current == Some(chunk.table) {
            self.phase += 1;
        }
    }
}

/// The database size after a chunk's delete batch, from the answers of
/// its statements (`meta.size_after` of each, in order): the last one D1
/// gave. None at all is an error, never a size of 0, which would turn the
/// size rule off and record an empty database.
pub fn size_after(answers: &[Option<u64>]) -> Result<u64, String> {
    answers
        .iter()
        .rev()
        .find_map(|s| *s)
        .ok_or_else(|| "D1 answered no meta.size_after".to_string())
}

/// The most subrequests one chunk of `table` can cost once its candidates
/// are read.
fn max_cost(table: ArchiveTable) -> u32 {
    let objects = match table {
        ArchiveTable::DeadLetters => 2 * ENTRY_CHUNK_ROWS,
        t => 1 + linked(t).len(),
    };
    CALLS_PER_CHUNK + objects as u32
}

/// How far back an idempotency key is remembered: `EVENT_RETENTION`, or
/// less while the size rule has swept events younger than that (a
/// redelivery of one of them is ingested anew). `size_swept_through` is
/// the newest `ingested_at` the size rule ever swept (kept in `sweep_state`).
pub fn effective_dedupe_window_ms(
    now: UnixMillis,
    event_retention_ms: i64,
    size_swept_through: Option<UnixMillis>,
) -> i64 {
    match size_swept_through {
        Some(t) if now - t < event_retention_ms => (now - t).max(0),
        _ => event_retention_ms,
    }
}

#[cfg(test)]
mod tests;
