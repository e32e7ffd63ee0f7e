//! One bounded step of the retention sweep: the glue that drives
//! `hookrelay_core::retention::plan::SweepRun`, reading candidates and
//! rows from D1 (`hookrelay_platform::db::retention`), putting them to R2,
//! then deleting them.
//!
//! Each chunk goes: journal → read rows → put each object → one D1 batch
//! that deletes the rows (tombstones first for dead letters) and clears
//! the journal. A crash after a put leaves the rows and the journal; the
//! next run redoes the chunk under the same keys, so each row is archived
//! once by key, and nothing is deleted before its object was written.

use hookrelay_core::config::RetentionConfig;
use hookrelay_core::retention::archive_key::ArchiveKey;
use hookrelay_core::retention::ndjson::{encode_rows, Row};
use hookrelay_core::retention::plan::{
    Chunk, Step, SweepReport, SweepRun, Written, DEFAULT_SUBREQUEST_BUDGET,
};
use hookrelay_core::state::ArchiveTable;
use hookrelay_platform::archive_bucket::{self, PutIf};
use hookrelay_platform::db::sweep_state::{self, SweepStart};
use hookrelay_platform::db::{batch, retention};
use worker::{D1Database, Env, Result};

/// What a step did, and what it added to the archive.
pub struct StepDone {
    /// The plan's report.
    pub report: SweepReport,
    /// Objects and rows archived and deleted (each chunk counts once: only
    /// its delete, which clears the journal, makes it count).
    pub fresh: (u64, u64),
}

/// Runs one bounded step at `now`, from `start` (the step holds the lease).
pub async fn step(
    env: &Env,
    db: &D1Database,
    cfg: RetentionConfig,
    now: i64,
    start: SweepStart,
) -> Result<StepDone> {
    let mut run = SweepRun::start(
        now,
        cfg,
        start.size_bytes,
        start.journal,
        DEFAULT_SUBREQUEST_BUDGET,
    );
    let mut fresh = (0_u64, 0_u64);
    loop {
        let (chunk, redo) = match run.next_step() {
            Step::Finished(report) => return Ok(StepDone { report, fresh }),
            Step::Redo(chunk) => (chunk, true),
            Step::Read(q) => {
                let candidates = retention::candidates(db, &q).await?;
                match run.select(&q, &candidates) {
                    Some(chunk) => (chunk, false),
                    None => {
                        run.nothing(&q);
                        continue;
                    }
                }
            }
        };
        let written = move_chunk(env, db, &chunk, redo, now).await?;
        // A redo is counted too: the run that first wrote the chunk failed
        // before its delete, and so counted nothing.
        fresh.0 += u64::from(written.objects);
        fresh.1 += written.rows.iter().map(|(_, n)| n).sum::<u64>();
        run.done(&chunk, &written);
    }
}

/// Archives then deletes one chunk.
async fn move_chunk(
    env: &Env,
    db: &D1Database,
    chunk: &Chunk,
    redo: bool,
    now: i64,
) -> Result<Written> {
    if !redo {
        sweep_state::write_journal(db, chunk).await?;
    }
    let read = retention::read_chunk(db, chunk).await?;
    let objects = objects_of(chunk, read);
    let mut rows = Vec::new();
    let mut puts = 0_u32;
    for (table, key, object_rows) in &objects {
        if object_rows.is_empty() {
            continue;
        }
        let text = encode_rows(object_rows);
        let n = object_rows.len() as u32;
        archive_bucket::put(env, &key.to_string(), &text, n, PutIf::Always).await?;
        puts += 1;
        if *table != ArchiveTable::Payloads || chunk.table == ArchiveTable::Events {
            add(&mut rows, *table, u64::from(n));
        }
    }
    let entry_keys: Vec<String> = match chunk.table {
        ArchiveTable::DeadLetters => chunk.keys().iter().map(ToString::to_string).collect(),
        _ => Vec::new(),
    };
    let mut stmts = retention::delete_chunk(db, chunk, &entry_keys, now)?;
    stmts.push(sweep_state::clear_journal(db));
    let results = batch(db, stmts).await?;
    let size_after = results
        .iter()
        .filter_map(|r| r.size_after())
        .next_back()
        .unwrap_or(0);
    Ok(Written {
        rows,
        objects: puts,
        size_after,
    })
}

fn add(rows: &mut Vec<(ArchiveTable, u64)>, table: ArchiveTable, n: u64) {
    match rows.iter_mut().find(|(t, _)| *t == table) {
        Some((_, total)) => *total += n,
        None => rows.push((table, n)),
    }
}

/// The objects a chunk writes: its keys matched with the rows read per
/// table (in `retention::chunk_tables` order); for dead letters one object
/// per entry, and its claim-checked payload beside it.
fn objects_of(chunk: &Chunk, mut read: Vec<Vec<Row>>) -> Vec<(ArchiveTable, ArchiveKey, Vec<Row>)> {
    if chunk.table != ArchiveTable::DeadLetters {
        let tables = retention::chunk_tables(chunk);
        return tables
            .into_iter()
            .zip(chunk.keys())
            .zip(read)
            .map(|((t, k), rows)| (t, k, rows))
            .collect();
    }
    let payloads = read.pop().unwrap_or_default();
    let entries = read.pop().unwrap_or_default();
    let mut out = Vec::new();
    for (row, key) in chunk.rows.iter().zip(chunk.keys()) {
        let entry: Vec<Row> = entries
            .iter()
            .filter(|e| text_of(e, "id") == Some(&row.id))
            .cloned()
            .collect();
        let event_id = entry.first().and_then(|e| text_of(e, "event_id")).cloned();
        let payload: Vec<Row> = payloads
            .iter()
            .filter(|p| event_id.is_some() && text_of(p, "event_id") == event_id.as_ref())
            .cloned()
            .collect();
        out.push((
            ArchiveTable::Payloads,
            key.sibling(ArchiveTable::Payloads),
            payload,
        ));
        out.push((ArchiveTable::DeadLetters, key, entry));
    }
    out
}

fn text_of<'a>(row: &'a Row, column: &str) -> Option<&'a String> {
    match row.get(column) {
        Some(serde_json::Value::String(s)) => Some(s),
        _ => None,
    }
}
