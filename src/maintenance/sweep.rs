//! One bounded step of the retention sweep: the glue that drives
//! `hookrelay_core::retention::plan::SweepRun`, reading candidates and
//! rows from D1 (`hookrelay_platform::db::retention`), putting them to R2,
//! then deleting them.
//!
//! Each chunk goes: one D1 batch that writes the journal and reads the
//! rows → put each object → one D1 batch that deletes the rows (tombstones
//! first for dead letters), clears the journal and reads the next chunk's
//! candidates (`SweepRun::read_ahead`). A crash after a put leaves the rows
//! and the journal; the next run redoes the chunk under the same keys, so
//! each row is archived once by key, and nothing is deleted before its
//! object was written.

use hookrelay_core::config::RetentionConfig;
use hookrelay_core::retention::archive_key::ArchiveKey;
use hookrelay_core::retention::ndjson::{encode_rows, Row};
use hookrelay_core::retention::plan::{Candidates, Chunk, Step, SweepReport, SweepRun, Written};
use hookrelay_core::state::ArchiveTable;
use hookrelay_platform::archive_bucket::{self, PutIf};
use hookrelay_platform::db::sweep_state;
use hookrelay_platform::db::{batch, retention, Rows};
use worker::{D1Database, Env, Result};

/// What a step did, and what it added to the archive.
pub struct StepDone {
    /// The plan's report.
    pub report: SweepReport,
    /// Objects and rows archived and deleted (each chunk counts once: only
    /// its delete, which clears the journal, makes it count).
    pub fresh: (u64, u64),
}

/// Runs one bounded step at `now` within `budget` subrequests, its first
/// read included (the caller holds the sweep's lease, and takes `budget`
/// from the invocation's, `core::subrequests`).
pub async fn step(
    env: &Env,
    db: &D1Database,
    cfg: RetentionConfig,
    now: i64,
    budget: u32,
) -> Result<StepDone> {
    let start = sweep_state::start(db).await?;
    let mut run = SweepRun::start(
        now,
        cfg,
        start.size_bytes,
        start.journal,
        budget.saturating_sub(1),
    );
    let mut fresh = (0_u64, 0_u64);
    loop {
        let (chunk, redo) = match run.next_step() {
            Step::Finished(report) => return Ok(StepDone { report, fresh }),
            Step::Read(queries) => {
                run.read(retention::read_candidates(db, &queries).await?);
                continue;
            }
            Step::Redo(chunk) => (chunk, true),
            Step::Move(chunk) => (chunk, false),
        };
        let (written, ahead) = move_chunk(env, db, &run, &chunk, redo, now).await?;
        // A redo is counted too: the run that first wrote the chunk failed
        // before its delete, and so counted nothing.
        fresh.0 += u64::from(written.objects);
        fresh.1 += written.rows.iter().map(|(_, n)| n).sum::<u64>();
        run.done(&chunk, &written);
        run.read(ahead);
    }
}

/// Archives then deletes one chunk; answers what it wrote and the
/// candidates it read ahead in its delete batch.
async fn move_chunk(
    env: &Env,
    db: &D1Database,
    run: &SweepRun,
    chunk: &Chunk,
    redo: bool,
    now: i64,
) -> Result<(Written, Vec<Candidates>)> {
    // The journal goes in the read's batch: written before any put, at no
    // extra round trip. A redo's chunk is the journal already.
    let mut stmts = Vec::new();
    if !redo {
        stmts.push(sweep_state::write_journal(db, chunk)?);
    }
    let journaled = stmts.len();
    stmts.extend(retention::read_statements(db, chunk)?);
    let read = batch(db, stmts).await?;
    let ((rows, puts), read_keys) = if chunk.table == ArchiveTable::DeadLetters {
        (
            put_entries(env, chunk, &read[journaled..]).await?,
            Vec::new(),
        )
    } else {
        put_ranges(env, chunk, &read[journaled..]).await?
    };
    let entry_keys: Vec<String> = match chunk.table {
        ArchiveTable::DeadLetters => chunk.keys().iter().map(ToString::to_string).collect(),
        _ => Vec::new(),
    };
    let mut stmts = retention::delete_chunk(db, chunk, &entry_keys, &read_keys, now)?;
    stmts.push(sweep_state::clear_journal(db));
    let deleted = stmts.len();
    let ahead = run.read_ahead(chunk, puts);
    for q in &ahead {
        stmts.push(retention::candidates_statement(db, q)?);
    }
    let results = batch(db, stmts).await?;
    // The size after the delete, not after the reads ahead (which report
    // the same size, but say nothing of the write).
    let size_after = results
        .iter()
        .take(deleted)
        .filter_map(|r| r.size_after())
        .next_back()
        .unwrap_or(0);
    let ahead = retention::candidates_of(&ahead, results.get(deleted..).unwrap_or_default())?;
    let written = Written {
        rows,
        objects: puts,
        size_after,
    };
    Ok((written, ahead))
}

/// Rows archived per table, and objects put.
type Put = (Vec<(ArchiveTable, u64)>, u32);

/// A chunk of rows under range keys: one object per table that has rows
/// (in `retention::chunk_tables` order, matching `chunk.keys()`), and the
/// keys of the linked rows read, for their delete. The rows go to R2 as D1
/// returned them, encoded in JS: nothing here reads them, and copying
/// ~300 KB a chunk into wasm and back was most of the sweep's own CPU
/// (bench/archive-sweep.mjs).
async fn put_ranges(
    env: &Env,
    chunk: &Chunk,
    read: &[Rows],
) -> Result<(Put, Vec<(ArchiveTable, String)>)> {
    let tables = retention::chunk_tables(chunk);
    // One result set per table, or a table would go unarchived and its
    // rows still be deleted.
    if read.len() != tables.len() {
        return Err(worker::Error::RustError(format!(
            "D1 answered {} result sets for a chunk's read of {}; nothing was put or deleted, the next run retries",
            read.len(),
            tables.len()
        )));
    }
    let (mut rows, mut puts, mut read_keys) = (Vec::new(), 0_u32, Vec::new());
    for ((table, key), result) in tables.into_iter().zip(chunk.keys()).zip(read) {
        let results = result.results_array();
        if let Some(keys) = retention::read_keys(chunk, table, &results)? {
            read_keys.push((table, keys));
        }
        if results.length() == 0 {
            continue;
        }
        let n = archive_bucket::put_rows(env, &key.to_string(), &results).await?;
        puts += 1;
        add(&mut rows, table, u64::from(n));
    }
    Ok(((rows, puts), read_keys))
}

/// A chunk of dead letters: one object per entry, and its claim-checked
/// payload beside it (not counted as archived rows: it is the entry's).
async fn put_entries(env: &Env, chunk: &Chunk, read: &[Rows]) -> Result<Put> {
    let read = read
        .iter()
        .map(Rows::json_objects)
        .collect::<Result<Vec<_>>>()?;
    // The entries' rows and their payloads: anything else is a read that
    // went wrong, and archiving less than the chunk would let its delete
    // lose rows.
    if read.len() != 2 {
        return Err(worker::Error::RustError(format!(
            "D1 answered {} result sets for a dead-letter chunk's read of 2; nothing was put or deleted, the next run retries",
            read.len()
        )));
    }
    let (mut rows, mut puts) = (Vec::new(), 0_u32);
    for (table, key, object_rows) in entry_objects(chunk, read) {
        if object_rows.is_empty() {
            continue;
        }
        let n = object_rows.len() as u32;
        let text = encode_rows(&object_rows);
        archive_bucket::put(env, &key.to_string(), &text, n, PutIf::Always).await?;
        puts += 1;
        if table != ArchiveTable::Payloads {
            add(&mut rows, table, u64::from(n));
        }
    }
    Ok((rows, puts))
}

fn add(rows: &mut Vec<(ArchiveTable, u64)>, table: ArchiveTable, n: u64) {
    match rows.iter_mut().find(|(t, _)| *t == table) {
        Some((_, total)) => *total += n,
        None => rows.push((table, n)),
    }
}

/// The objects of a chunk of dead letters: one per entry (the entries'
/// rows, then the claim-checked payloads, as `retention::read_statements`
/// reads them), and its payload beside it.
fn entry_objects(
    chunk: &Chunk,
    mut read: Vec<Vec<Row>>,
) -> Vec<(ArchiveTable, ArchiveKey, Vec<Row>)> {
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
