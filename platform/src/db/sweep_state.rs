//! `sweep_state`: the retention sweep's one row (migration 0010): the
//! journal of the chunk being moved and its number (`chunk_seq`, migration
//! 0013), the generation that fences the chain of continuation messages,
//! what the last run did, the archive's totals (every object the sweep or
//! an eviction wrote, counted in the batch that deletes its rows), and the
//! two leases (`core::retention::lease`).

use super::{int, opt_text, text, Query, Rows};
use hookrelay_core::maintenance::lease::Lease;
use hookrelay_core::retention::plan::Chunk;
use worker::{D1Database, D1PreparedStatement, Result};

/// What a run starts from.
pub struct SweepStart {
    /// The chunk a crashed run left between its put and its delete.
    pub journal: Option<Chunk>,
    /// The database size (`meta.size_after` of this read).
    pub size_bytes: u64,
}

/// Reads the journal and, from the same answer's metadata, the size.
pub async fn start(db: &D1Database) -> Result<SweepStart> {
    let rows = db
        .prepare("SELECT journal FROM sweep_state WHERE id = 1")
        .query()
        .await?;
    let journal = rows.map_first(|r| r.opt_text("journal"))?.flatten();
    let journal = match journal {
        Some(j) => Some(serde_json::from_str(&j).map_err(|e| {
            worker::Error::RustError(format!(
                "sweep_state.journal is not a chunk ({e}); set it to NULL to skip it"
            ))
        })?),
        None => None,
    };
    let size_bytes = rows.size_after().ok_or_else(|| {
        worker::Error::RustError("D1 answered no meta.size_after; the size rule cannot run".into())
    })?;
    Ok(SweepStart {
        journal,
        size_bytes,
    })
}

/// Records the chunk about to be put, with the next chunk number
/// (`Chunk::seq`, part of its keys): in the batch that reads its rows,
/// which completes before the first put. Answers the number
/// ([`journal_seq`]); a redo keeps the one its journal holds.
pub fn write_journal(db: &D1Database, chunk: &Chunk) -> Result<D1PreparedStatement> {
    db.prepare(
        "UPDATE sweep_state SET chunk_seq = chunk_seq + 1, journal = json_set(?1, '$.seq', chunk_seq + 1)          WHERE id = 1 RETURNING chunk_seq",
    )
    .bind(&[text(&serde_json::to_string(chunk)?)])
}

/// The chunk number [`write_journal`] answered.
pub fn journal_seq(rows: &Rows) -> Result<u64> {
    let seq = rows.map_first(|r| r.int("chunk_seq"))?.ok_or_else(|| {
        worker::Error::RustError(
            "sweep_state has no row; apply migrations/0010_lifecycle.sql".into(),
        )
    })?;
    Ok(seq.max(0) as u64)
}

/// Clears the journal and adds the chunk's `objects` and `rows` to the
/// archive's totals: in the batch that deletes the chunk's rows, so the
/// three happen together or not at all (a redo counts once).
pub fn clear_journal(db: &D1Database, objects: u32, rows: u64) -> Result<D1PreparedStatement> {
    db.prepare(
        "UPDATE sweep_state SET journal = NULL, archive_objects = archive_objects + ?1,          archive_rows = archive_rows + ?2 WHERE id = 1",
    )
    .bind(&[int(i64::from(objects)), int(rows as i64)])
}

/// Adds to the archive's totals the dead letters of `entries` (a JSON
/// array of `[id, key, objects, …]`) that this batch's tombstone statement
/// just took out (`evicted_at` = `now_ms`, `cause`, that key): one row and
/// their objects each. Placed between the tombstones and the delete, which
/// share one guard, so it counts exactly the entries deleted, whether an
/// eviction or the sweep took them.
pub fn count_entries_archived(
    db: &D1Database,
    entries: wasm_bindgen::JsValue,
    now_ms: i64,
    cause: wasm_bindgen::JsValue,
) -> Result<D1PreparedStatement> {
    const TAKEN: &str = "FROM json_each(?1) a JOIN dead_letter_tombstones t ON t.id = a.value->>0          WHERE t.evicted_at = ?2 AND t.cause = ?3 AND t.archive_key = a.value->>1";
    db.prepare(format!(
        "UPDATE sweep_state SET archive_rows = archive_rows + (SELECT count(*) {TAKEN}),          archive_objects = archive_objects + (SELECT coalesce(sum(a.value->>2), 0) {TAKEN}) WHERE id = 1"
    ))
    .bind(&[entries, int(now_ms), cause])
}

/// Clears the journal once the copies of a dead-letter chunk's kept
/// entries are erased.
pub async fn clear_journal_after_erase(db: &D1Database) -> Result<()> {
    db.prepare("UPDATE sweep_state SET journal = NULL WHERE id = 1")
        .query()
        .await?;
    Ok(())
}

/// What one run leaves in `sweep_state`.
pub struct RunRecord<'a> {
    /// When it ran.
    pub at: i64,
    /// Its answer (JSON), when it finished.
    pub result: Option<&'a str>,
    /// Why it failed, when it did.
    pub error: Option<&'a str>,
    /// The database size after it.
    pub size_bytes: Option<u64>,
    /// The newest `ingested_at` the size rule swept.
    pub size_swept_through: Option<i64>,
}

/// Writes what a run did.
pub async fn record(db: &D1Database, run: &RunRecord<'_>) -> Result<()> {
    record_statement(db, run)?.query().await?;
    Ok(())
}

/// The statement of [`record`], to batch with what follows a step.
pub fn record_statement(db: &D1Database, run: &RunRecord<'_>) -> Result<D1PreparedStatement> {
    db.prepare(
        "UPDATE sweep_state SET last_run_at = ?1, last_result = COALESCE(?2, last_result), last_error = ?3, \
         size_bytes = COALESCE(?4, size_bytes), \
         size_swept_through = MAX(COALESCE(size_swept_through, ?5), COALESCE(?5, size_swept_through)) WHERE id = 1",
    )
    .bind(&[
        int(run.at),
        opt_text(run.result),
        opt_text(run.error),
        run.size_bytes.map_or(wasm_bindgen::JsValue::NULL, |n| int(n as i64)),
        run.size_swept_through.map_or(wasm_bindgen::JsValue::NULL, int),
    ])
}

/// Starts a new chain of continuation messages: the new generation. Every
/// message of an older chain then finds itself stale.
pub async fn new_generation(db: &D1Database) -> Result<i64> {
    let rows = claim_statement(db, None)?.query().await?;
    read_new_generation(&rows)
}

/// The answer to a [`claim_statement`] of `None`: the new generation.
pub fn read_new_generation(rows: &Rows) -> Result<i64> {
    read_claim(rows)?.ok_or_else(|| {
        worker::Error::RustError(
            "sweep_state has no row; apply migrations/0010_lifecycle.sql".into(),
        )
    })
}

/// Claims continuation `generation`: the next generation if it is still
/// current, `None` if a newer chain (a cron, a maintenance run) took over.
pub async fn claim(db: &D1Database, generation: Option<i64>) -> Result<Option<i64>> {
    let rows = claim_statement(db, generation)?.query().await?;
    read_claim(&rows)
}

/// The statement of [`claim`] (`None`: start a new chain whatever the
/// current one), to batch with what follows a step.
pub fn claim_statement(db: &D1Database, generation: Option<i64>) -> Result<D1PreparedStatement> {
    db.prepare("UPDATE sweep_state SET generation = generation + 1 WHERE id = 1 AND (?1 IS NULL OR generation = ?1) RETURNING generation")
        .bind(&[generation.map_or(wasm_bindgen::JsValue::NULL, int)])
}

/// The answer to a [`claim_statement`].
pub fn read_claim(rows: &Rows) -> Result<Option<i64>> {
    rows.map_first(|r| r.int("generation"))
}

/// Whether continuation `generation` is still the current chain's.
pub async fn is_current(db: &D1Database, generation: i64) -> Result<bool> {
    let rows = db
        .prepare("SELECT 1 AS current FROM sweep_state WHERE id = 1 AND generation = ?1")
        .bind(&[int(generation)])?
        .query()
        .await?;
    Ok(rows.map_first(|r| r.int("current"))?.is_some())
}

/// The sweep's state for the stats batch: the last run, the archive's
/// totals and the newest event the size rule swept.
pub fn stats_statement(db: &D1Database) -> D1PreparedStatement {
    db.prepare("SELECT last_run_at, last_result, last_error, size_bytes, size_swept_through, archive_objects, archive_rows FROM sweep_state WHERE id = 1")
}

/// The expiry of `lease` as stored (`None`: free), for
/// `core::retention::lease::turn`.
pub async fn lease(db: &D1Database, lease: Lease) -> Result<Option<i64>> {
    let rows = db
        .prepare(format!(
            "SELECT {} AS until FROM sweep_state WHERE id = 1",
            lease.column()
        ))
        .query()
        .await?;
    rows.map_first(|r| r.opt_int("until"))?.ok_or_else(|| {
        worker::Error::RustError(
            "sweep_state has no row; apply migrations/0010_lifecycle.sql".into(),
        )
    })
}

/// Writes the expiry `until` of `lease` if the row still holds `read`
/// (what this run read), and answers whether it did: of two runs that read
/// the same lease, one writes.
pub async fn take_lease(
    db: &D1Database,
    lease: Lease,
    read: Option<i64>,
    until: i64,
) -> Result<bool> {
    let column = lease.column();
    let rows = db
        .prepare(format!(
            "UPDATE sweep_state SET {column} = ?2 WHERE id = 1 AND {column} IS ?1"
        ))
        .bind(&[read.map_or(wasm_bindgen::JsValue::NULL, int), int(until)])?
        .query()
        .await?;
    Ok(rows.changes() == 1)
}

/// Gives `lease` back, if it is still the one that expires at `until` (a
/// holder that outlived its lease leaves the next holder's alone).
pub async fn release_lease(db: &D1Database, lease: Lease, until: i64) -> Result<()> {
    release_statement(db, lease, until)?.query().await?;
    Ok(())
}

/// The statement of [`release_lease`], to batch with a run's last writes.
pub fn release_statement(db: &D1Database, lease: Lease, until: i64) -> Result<D1PreparedStatement> {
    let column = lease.column();
    db.prepare(format!(
        "UPDATE sweep_state SET {column} = NULL WHERE id = 1 AND {column} = ?1"
    ))
    .bind(&[int(until)])
}
