//! One bounded step of the retention sweep: the glue that drives
//! `hookrelay_core::retention::plan::SweepRun`, reading candidates and
//! rows from D1 (`hookrelay_platform::db::retention`), putting them to R2,
//! then deleting them.
//!
//! Each chunk goes: one D1 batch that writes the journal (numbering the
//! chunk, whose number its range keys carry) and reads the rows → put each
//! object → one D1 batch that deletes the rows still sweepable (tombstones
//! first for dead letters), clears the journal, adds to the archive's
//! totals and reads the next chunk's candidates (`SweepRun::read_ahead`).
//! A crash after a put leaves the rows and the journal; the next run redoes
//! the chunk under the same keys, so each row is archived once by key, and
//! nothing is deleted before its object was written.
//!
//! An events chunk also deletes, before its rows, the queue-destination
//! bodies of its events that no send recorded (put before migration 0025)
//! and no queued message can still name
//! (`hookrelay_core::deliver::queue_destination::bodies_to_delete`); a
//! recorded body stays until the hold after its last send (`super::bodies`).
//!
//! A dead letter that changed between its read and its delete (unarchived,
//! discarded) stays in D1, and its copy just put is erased before the
//! journal is cleared: a discarded entry's old payload never outlives it in
//! R2, and a crash before the erase leaves the journal, whose redo erases.

use hookrelay_core::deliver::queue_destination::bodies_to_delete;
use hookrelay_core::retention::entry_archive::{entry_archives, EntryArchive};
use hookrelay_core::retention::ndjson::Row;
use hookrelay_core::retention::plan::{
    size_after, Candidates, Chunk, Step, SweepReport, SweepRun, Written,
};
use hookrelay_core::retention::restore::archived_copies;
use hookrelay_core::retention::RetentionConfig;
use hookrelay_core::state::ArchiveTable;
use hookrelay_platform::archive_bucket::{self, PutIf};
use hookrelay_platform::db::{batch, retention, Rows};
use hookrelay_platform::db::{dead_letters, destination_bodies, sweep_state, swept_events};
use worker::{D1Database, D1PreparedStatement, Env, Result};

/// What a step did.
pub struct StepDone {
    /// The plan's report.
    pub report: SweepReport,
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
    loop {
        let (chunk, redo) = match run.next_step() {
            Step::Finished(report) => return Ok(StepDone { report }),
            Step::Read(queries) => {
                run.read(retention::read_candidates(db, &queries).await?);
                continue;
            }
            Step::Redo(chunk) => (chunk, true),
            Step::Move(chunk) => (chunk, false),
        };
        let (written, ahead) = move_chunk(env, db, &run, chunk.clone(), redo, now).await?;
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
    mut chunk: Chunk,
    redo: bool,
    now: i64,
) -> Result<(Written, Vec<Candidates>)> {
    // The journal goes in the read's batch (last: the batch is one
    // transaction, so its place changes nothing but the answer's index):
    // written before any put, at no extra round trip. A redo's chunk is
    // the journal already.
    let mut stmts = retention::read_statements(db, &chunk)?;
    let reads = stmts.len();
    if !redo {
        stmts.push(sweep_state::write_journal(db, &chunk)?);
    }
    let tracked_at = push_tracked(db, &chunk, &mut stmts)?;
    let read = batch(db, stmts).await?;
    let tracked = tracked_in(&read, tracked_at)?;
    if !redo {
        let journal = read.get(reads).ok_or_else(|| {
            worker::Error::RustError(
                "D1 answered no result for the journal's write; nothing was put, the next run retries".into(),
            )
        })?;
        chunk.seq = Some(sweep_state::journal_seq(journal)?);
    }
    let read = read.get(..reads).unwrap_or_default();
    let at = SweptAt {
        now,
        pointers_from: run.swept_pointers_from(),
        tracked,
    };
    let (mut stmts, rows, puts) = put_chunk(env, db, &chunk, read, at).await?;
    let deleted = stmts.len();
    let ahead = run.read_ahead(&chunk, puts);
    for q in &ahead {
        stmts.push(retention::candidates_statement(db, q)?);
    }
    let results = batch(db, stmts).await?;
    // The size after the delete, not after the reads ahead (which report
    // the same size, but say nothing of the write). A missing size is an
    // error: read as 0 it would turn the size rule off and record 0.
    let sizes: Vec<Option<u64>> = results.iter().take(deleted).map(Rows::size_after).collect();
    let size_after = size_after(&sizes).map_err(|e| {
        worker::Error::RustError(format!(
            "{e} for the delete of a chunk of {}; its rows are archived and deleted, the next run reads the size again",
            chunk.table.as_str()
        ))
    })?;
    let extra_calls = match chunk.table {
        ArchiveTable::DeadLetters => erase_kept(env, db, &chunk, &results[deleted - 1]).await?,
        // The delete of an events chunk's queue-destination bodies
        // (`put_chunk`): one R2 call per chunk.
        ArchiveTable::Events => 1,
        _ => 0,
    };
    let ahead = retention::candidates_of(&ahead, results.get(deleted..).unwrap_or_default())?;
    let written = Written {
        rows,
        objects: puts,
        extra_calls,
        size_after,
    };
    Ok((written, ahead))
}

/// For an events chunk, the read of which of its events have a recorded
/// body send, pushed last; where it is.
fn push_tracked(
    db: &D1Database,
    chunk: &Chunk,
    stmts: &mut Vec<D1PreparedStatement>,
) -> Result<Option<usize>> {
    if chunk.table != ArchiveTable::Events {
        return Ok(None);
    }
    let ids: Vec<&str> = chunk.rows.iter().map(|r| r.id.as_str()).collect();
    stmts.push(destination_bodies::tracked(db, &ids)?);
    Ok(Some(stmts.len() - 1))
}

/// The events [`push_tracked`]'s read found (none for another table).
fn tracked_in(read: &[Rows], at: Option<usize>) -> Result<Vec<String>> {
    let Some(i) = at else {
        return Ok(Vec::new());
    };
    match read.get(i) {
        Some(r) => destination_bodies::read_tracked(r),
        None => Err(worker::Error::RustError(
            "D1 answered no result for the chunk's recorded bodies; nothing was put, the next run retries".into(),
        )),
    }
}

/// When a chunk is swept: now, from when swept events are remembered,
/// and which of an events chunk's events have a recorded body send.
struct SweptAt {
    now: i64,
    pointers_from: i64,
    tracked: Vec<String>,
}

/// Puts a chunk's objects from its `read`, and answers the statements
/// that delete what may still go, the rows archived per table and the
/// objects put.
async fn put_chunk(
    env: &Env,
    db: &D1Database,
    chunk: &Chunk,
    read: &[Rows],
    at: SweptAt,
) -> Result<(Vec<D1PreparedStatement>, Vec<(ArchiveTable, u64)>, u32)> {
    let now = at.now;
    if chunk.table != ArchiveTable::DeadLetters {
        let ((rows, puts), read_keys) = put_ranges(env, chunk, read).await?;
        let mut stmts = retention::delete_chunk(db, chunk, &read_keys)?;
        if chunk.table == ArchiveTable::Events {
            // A queue destination's large body put before its sends were
            // recorded leaves with its event: it is deleted before the
            // rows, so a failed delete leaves the journal and the redo
            // deletes again; an event the guard then keeps has lost only a
            // copy its next send writes again.
            let bodies = bodies_to_delete(&chunk.rows, &at.tracked, now);
            if !bodies.is_empty() {
                archive_bucket::delete(env, &bodies).await?;
            }
            // The story of a deleted event names the object that holds it.
            let ids: Vec<&str> = chunk.rows.iter().map(|r| r.id.as_str()).collect();
            let key = chunk.keys()[0].to_string();
            stmts.push(dead_letters::name_event_archive(db, &ids, &key)?);
            stmts.push(swept_events::remember(db, &ids, &key, now)?);
            stmts.push(swept_events::forget_before(db, at.pointers_from)?);
        }
        let total = rows.iter().map(|(_, n)| n).sum();
        stmts.push(sweep_state::clear_journal(db, puts, total)?);
        return Ok((stmts, rows, puts));
    }
    let (rows, archives) = put_entries(env, read).await?;
    let puts = archives
        .iter()
        .map(|(a, _, _)| a.objects.len() as u32)
        .sum();
    let put: Vec<retention::PutEntry<'_>> = archives
        .iter()
        .map(|(a, status, resolved_at)| retention::PutEntry {
            id: &a.id,
            key: &a.key,
            objects: a.objects.len(),
            status,
            resolved_at: *resolved_at,
        })
        .collect();
    Ok((retention::delete_entries(db, chunk, &put, now)?, rows, puts))
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

/// An entry put, with its status and `resolved_at` as read (its delete's
/// guard).
type PutArchive = (EntryArchive, String, i64);

/// A chunk of dead letters: each entry still sweepable as read, archived
/// by the same core function as a capacity eviction (`entry_archives`:
/// the row, and beside it the claim-checked payload its envelope's
/// `input.body_ref` names, not counted as archived rows: it is the
/// entry's).
async fn put_entries(
    env: &Env,
    read: &[Rows],
) -> Result<(Vec<(ArchiveTable, u64)>, Vec<PutArchive>)> {
    // The entries' rows and their payloads: anything else is a read that
    // went wrong, and archiving less than the chunk would let its delete
    // lose rows.
    let [entries, payloads] = read else {
        return Err(worker::Error::RustError(format!(
            "D1 answered {} result sets for a dead-letter chunk's read of 2; nothing was put or deleted, the next run retries",
            read.len()
        )));
    };
    let entries: Vec<Row> = entries.json_objects()?;
    let archives =
        entry_archives(&entries, &payloads.json_objects()?).map_err(worker::Error::RustError)?;
    let mut put = Vec::with_capacity(archives.len());
    for (archive, row) in archives.into_iter().zip(&entries) {
        let status = row.get("status").and_then(|v| v.as_str());
        let resolved_at = row.get("resolved_at").and_then(serde_json::Value::as_i64);
        let (Some(status), Some(resolved_at)) = (status, resolved_at) else {
            return Err(worker::Error::RustError(format!(
                "the swept entry {} has no status or resolved_at; nothing of its chunk was deleted",
                archive.id
            )));
        };
        for object in &archive.objects {
            archive_bucket::put(env, &object.key, &object.text, 1, PutIf::Always).await?;
        }
        put.push((archive, status.to_string(), resolved_at));
    }
    let rows = match put.len() {
        0 => Vec::new(),
        n => vec![(ArchiveTable::DeadLetters, n as u64)],
    };
    Ok((rows, put))
}

/// After a dead-letter chunk's delete: the entries still in D1 (they
/// changed since the read, or were never put) lose the copies this chunk
/// may have put, and only then is the journal cleared. Answers the
/// subrequests spent; none when every entry went.
async fn erase_kept(env: &Env, db: &D1Database, chunk: &Chunk, kept: &Rows) -> Result<u32> {
    let kept = retention::kept_entries(kept)?;
    if kept.is_empty() {
        return Ok(0);
    }
    let keys: Vec<String> = chunk
        .rows
        .iter()
        .filter(|r| kept.contains(&r.id))
        .flat_map(|r| archived_copies(&r.id, r.at))
        .map(|k| k.to_string())
        .collect();
    archive_bucket::delete(env, &keys).await?;
    sweep_state::clear_journal_after_erase(db).await?;
    Ok(2)
}

fn add(rows: &mut Vec<(ArchiveTable, u64)>, table: ArchiveTable, n: u64) {
    match rows.iter_mut().find(|(t, _)| *t == table) {
        Some((_, total)) => *total += n,
        None => rows.push((table, n)),
    }
}
