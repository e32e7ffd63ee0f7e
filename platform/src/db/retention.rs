//! The retention sweep's SQL (DESIGN §5), for every swept table: the
//! candidate read, the read of a chunk's rows by id, and the guarded
//! deletes.
//!
//! One file rather than a hunk in each table's file: the statements share
//! one shape (ids travel as one JSON array through `json_each`, so a
//! statement binds a handful of parameters whatever the chunk). What may
//! be swept is [`hookrelay_core::retention::tables`]'s statement
//! (`alone`, `with_parent`), which this file only places: the candidate
//! read filters by it, so rows that must stay never crowd out older rows
//! that may go, and every delete repeats it with the chunk's cutoff, so a
//! row that stopped being sweepable between the read and the delete stays
//! in D1 (its archived copy is a second copy, never the only one).
//!
//! Linked rows (an event's attempts, payloads, steps and deliveries) are
//! deleted only as read (a delivery also only unchanged since: its
//! `updated_at`) and only once their event is gone, so a kept event keeps
//! them.

use super::{batch, int, text, Rows};
use hookrelay_core::retention::entry_archive::BODY_REF_SQL;
use hookrelay_core::retention::plan::{Candidate, Candidates, Chunk, ChunkQuery};
use hookrelay_core::retention::tables::{age_column, alone, linked, with_parent};
use hookrelay_core::state::{ArchiveTable, TombstoneCause};
use worker::{D1Database, D1PreparedStatement, Result};

/// How one table is read and deleted by id.
struct Spec {
    /// The id column (ORDER BY, IN).
    id: &'static str,
    /// The id as read (text).
    id_expr: &'static str,
    /// Whether ids are integers (sent as JSON numbers, so the comparison
    /// with an INTEGER column needs no conversion).
    int_ids: bool,
    /// The row's `at` as read (its key's day); the age column when empty.
    at_expr: &'static str,
    /// Its body's bytes.
    bytes: &'static str,
    /// Whether linked rows refer to it (1 or 0).
    linked: bool,
}

fn spec(table: ArchiveTable) -> Spec {
    let plain = |id, int_ids| Spec {
        id,
        id_expr: if int_ids { "CAST(id AS TEXT)" } else { id },
        int_ids,
        at_expr: age_column(table),
        bytes: "0",
        linked: false,
    };
    match table {
        ArchiveTable::Events => Spec {
            bytes: "body_bytes",
            linked: true,
            ..plain("event_id", false)
        },
        ArchiveTable::Attempts | ArchiveTable::Audit | ArchiveTable::EventSteps => {
            plain("id", true)
        }
        ArchiveTable::Deliveries => plain("event_id", false),
        ArchiveTable::Payloads => Spec {
            bytes: "body_bytes",
            ..plain("event_id", false)
        },
        // An entry's key names the day it was dead-lettered.
        ArchiveTable::DeadLetters => Spec {
            at_expr: "created_at",
            ..plain("id", false)
        },
        // Entries are not checked: a finished job always has some.
        ArchiveTable::Jobs => Spec {
            linked: true,
            ..plain("id", false)
        },
        ArchiveTable::Drains => plain("destination", false),
        ArchiveTable::Alarms => Spec {
            id_expr: "(id || '@' || since)",
            ..plain("(id || '@' || since)", false)
        },
        ArchiveTable::Tombstones | ArchiveTable::JobEntries => plain("id", false),
    }
}

/// Whether an event has rows of its linked tables beyond those a chunk
/// read (`except`: the JSON arrays of attempt ids, step ids, payload event
/// ids and delivery keys read; none for the candidate read). A payload a
/// dead letter holds stays with the entry ([`with_parent`]), so it does not
/// count. A delivery counts unless read as it is now ([`DELIVERY_AS_READ`]).
fn has_linked_rows(except: Option<[&str; 4]>) -> String {
    let not_read = |column: &str, i: usize| match except {
        Some(params) => format!(
            " AND {column} NOT IN (SELECT value FROM json_each({}))",
            params[i]
        ),
        None => String::new(),
    };
    let delivery_not_read = match except {
        Some(params) => format!(
            " AND NOT EXISTS (SELECT 1 FROM json_each({}) j WHERE {DELIVERY_AS_READ})",
            params[3]
        ),
        None => String::new(),
    };
    format!(
        "(EXISTS (SELECT 1 FROM attempts WHERE attempts.event_id = events.event_id{}) \
         OR EXISTS (SELECT 1 FROM event_steps WHERE event_steps.event_id = events.event_id{}) \
         OR EXISTS (SELECT 1 FROM payloads WHERE payloads.event_id = events.event_id{} AND {}) \
         OR EXISTS (SELECT 1 FROM deliveries WHERE deliveries.event_id = events.event_id{delivery_not_read}))",
        not_read("attempts.id", 0),
        not_read("event_steps.id", 1),
        not_read("payloads.event_id", 2),
        with_parent(ArchiveTable::Payloads),
    )
}

/// A `deliveries` row is the one read as key `j.value` (`[event_id,
/// destination, updated_at]`, [`read_keys`]): its key and its last change
/// as read, so a delivery changed since the read (replayed, re-parked) is
/// not the row archived, and stays.
const DELIVERY_AS_READ: &str = "j.value->>0 = deliveries.event_id \
     AND j.value->>1 = deliveries.destination AND j.value->>2 = deliveries.updated_at";

/// Reads the candidates of every query in one batch (oldest first, at
/// most `q.limit` each), in the queries' order.
pub async fn read_candidates(db: &D1Database, queries: &[ChunkQuery]) -> Result<Vec<Candidates>> {
    let stmts = queries
        .iter()
        .map(|q| candidates_statement(db, q))
        .collect::<Result<Vec<_>>>()?;
    let read = batch(db, stmts).await?;
    candidates_of(queries, &read)
}

/// Decodes the answers of [`candidates_statement`]s, one per query; fewer
/// answers than queries is an error (a table would look empty).
pub fn candidates_of(queries: &[ChunkQuery], read: &[Rows]) -> Result<Vec<Candidates>> {
    if read.len() != queries.len() {
        return Err(worker::Error::RustError(format!(
            "D1 answered {} result sets for {} candidate reads; the next run reads again",
            read.len(),
            queries.len()
        )));
    }
    queries
        .iter()
        .zip(read)
        .map(|(q, rows)| Ok((q.clone(), decode_candidates(rows)?)))
        .collect()
}

/// The statement that reads the candidates for `q`: rows old enough and
/// sweepable ([`alone`]), oldest first, at most `q.limit`.
pub fn candidates_statement(db: &D1Database, q: &ChunkQuery) -> Result<D1PreparedStatement> {
    let s = spec(q.table);
    let linked = if s.linked && q.table == ArchiveTable::Events {
        has_linked_rows(None)
    } else {
        u8::from(s.linked).to_string()
    };
    let sql = format!(
        "SELECT {} AS id, {} AS at, {} AS bytes, {linked} AS linked FROM {} \
         WHERE {col} IS NOT NULL AND {col} < ?1 AND {} ORDER BY {col}, {} LIMIT ?2",
        s.id_expr,
        s.at_expr,
        s.bytes,
        q.table.as_str(),
        alone(q.table),
        s.id,
        col = q.column,
    );
    db.prepare(&sql).bind(&[int(q.before), int(q.limit as i64)])
}

fn decode_candidates(rows: &Rows) -> Result<Vec<Candidate>> {
    rows.map(|r| {
        Ok(Candidate {
            id: r.text("id")?,
            at: r.int("at")?,
            bytes: r.int("bytes")?.max(0) as u64,
            linked: r.int("linked")? != 0,
        })
    })
}

/// The chunk's ids as one JSON array, numbers for integer ids.
fn ids_json(chunk: &Chunk) -> Result<String> {
    let int_ids = spec(chunk.table).int_ids;
    let ids: Vec<serde_json::Value> = chunk
        .rows
        .iter()
        .map(|r| match (int_ids, r.id.parse::<i64>()) {
            (true, Ok(n)) => serde_json::Value::from(n),
            _ => serde_json::Value::from(r.id.as_str()),
        })
        .collect();
    Ok(serde_json::to_string(&ids)?)
}

const IDS: &str = "IN (SELECT value FROM json_each(?1))";

/// The chunk's own rows that may still go, over `?1` (the ids) and `?2`
/// (the chunk's cutoff): the read of its rows and its delete share it.
fn own_rows(chunk: &Chunk) -> String {
    let t = chunk.table;
    // Without a cutoff `?2` is bound NULL all the same: a statement's
    // parameters are the same whatever the journal.
    let age = match chunk.before {
        Some(_) => format!("AND {} < ?2", age_column(t)),
        None => "AND ?2 IS NULL".to_string(),
    };
    format!("{} {IDS} {age} AND {}", spec(t).id, alone(t))
}

/// `?2` of [`own_rows`]: the cutoff, or no age guard for a journal written
/// before chunks carried one.
fn cutoff(chunk: &Chunk) -> wasm_bindgen::JsValue {
    chunk.before.map_or(wasm_bindgen::JsValue::NULL, int)
}

/// Which rows of linked `target` a chunk reads, over `?1` (the chunk's ids).
fn linked_rows(chunk: &Chunk, target: ArchiveTable) -> String {
    let parent = match chunk.table {
        ArchiveTable::Jobs => "job_id",
        _ => "event_id",
    };
    format!("{parent} {IDS} AND {}", with_parent(target))
}

/// The tables a chunk reads and deletes: its own, then the linked ones
/// when any of its rows had linked rows.
pub fn chunk_tables(chunk: &Chunk) -> Vec<ArchiveTable> {
    let mut tables = vec![chunk.table];
    if chunk.linked {
        tables.extend(linked(chunk.table));
    }
    tables
}

/// The statements that read the chunk's rows, for one batch (the sweep
/// puts its journal write in front of them): per table of
/// [`chunk_tables`], the chunk's own rows only while they may still go;
/// for dead letters also the claim-checked payloads their envelopes name
/// (`input.body_ref`, as an eviction reads them). Decode each answer with
/// [`Rows::json_objects`].
pub fn read_statements(db: &D1Database, chunk: &Chunk) -> Result<Vec<D1PreparedStatement>> {
    let ids = text(&ids_json(chunk)?);
    let mut stmts = Vec::new();
    for t in chunk_tables(chunk) {
        let stmt = if t == chunk.table {
            db.prepare(format!(
                "SELECT * FROM {} WHERE {}",
                t.as_str(),
                own_rows(chunk)
            ))
            .bind(&[ids.clone(), cutoff(chunk)])?
        } else {
            db.prepare(format!(
                "SELECT * FROM {} WHERE {}",
                t.as_str(),
                linked_rows(chunk, t)
            ))
            .bind(std::slice::from_ref(&ids))?
        };
        stmts.push(stmt);
    }
    if chunk.table == ArchiveTable::DeadLetters {
        stmts.push(db.prepare(format!(
            "SELECT * FROM payloads WHERE event_id IN (SELECT {BODY_REF_SQL} FROM dead_letters WHERE {})",
            own_rows(chunk)
        )).bind(&[ids, cutoff(chunk)])?);
    }
    Ok(stmts)
}

/// The key columns of a linked table whose rows a chunk of events deletes
/// by what it read (so a row written, or for a delivery changed, between
/// the read and the delete stays).
fn read_key(chunk: &Chunk, table: ArchiveTable) -> Option<&'static [&'static str]> {
    match (chunk.table, table) {
        (ArchiveTable::Events, ArchiveTable::Attempts | ArchiveTable::EventSteps) => Some(&["id"]),
        (ArchiveTable::Events, ArchiveTable::Payloads) => Some(&["event_id"]),
        (ArchiveTable::Events, ArchiveTable::Deliveries) => {
            Some(&["event_id", "destination", "updated_at"])
        }
        _ => None,
    }
}

/// For a linked table of `chunk` deleted by what was read: the key of each
/// row read (`results`, as D1 answered them: the key column's value, or
/// an array of the key columns' values), as a JSON array for
/// [`delete_chunk`]. `None` for a table deleted by the chunk's ids.
pub fn read_keys(
    chunk: &Chunk,
    table: ArchiveTable,
    results: &js_sys::Array,
) -> Result<Option<String>> {
    let Some(columns) = read_key(chunk, table) else {
        return Ok(None);
    };
    let columns: Vec<wasm_bindgen::JsValue> = columns
        .iter()
        .map(|c| wasm_bindgen::JsValue::from_str(c))
        .collect();
    let key = |row: &wasm_bindgen::JsValue| -> std::result::Result<wasm_bindgen::JsValue, wasm_bindgen::JsValue> {
        match columns.as_slice() {
            [one] => js_sys::Reflect::get(row, one),
            many => many
                .iter()
                .map(|c| js_sys::Reflect::get(row, c))
                .collect::<std::result::Result<js_sys::Array, _>>()
                .map(Into::into),
        }
    };
    let keys: js_sys::Array = results
        .iter()
        .map(|row| key(&row))
        .collect::<std::result::Result<_, _>>()?;
    let json = js_sys::JSON::stringify(&keys)?;
    Ok(json.as_string())
}

/// The statements that delete a chunk of range-keyed rows (every table
/// but `dead_letters`): its own rows first, each only while it may still
/// go (old enough, sweepable, and for an event no linked row beyond those
/// read), then its linked rows, each only as read ([`read_keys`], `read`)
/// and only once its parent is gone.
pub fn delete_chunk(
    db: &D1Database,
    chunk: &Chunk,
    read: &[(ArchiveTable, String)],
) -> Result<Vec<D1PreparedStatement>> {
    let ids = text(&ids_json(chunk)?);
    let mut stmts = vec![delete_own(db, chunk, read, &ids)?];
    let (parent, parent_id, parent_col) = match chunk.table {
        ArchiveTable::Jobs => ("jobs", "id", "job_id"),
        _ => ("events", "event_id", "event_id"),
    };
    for t in chunk_tables(chunk).into_iter().skip(1) {
        let target = t.as_str();
        let parent_gone = format!(
            "NOT EXISTS (SELECT 1 FROM {parent} p WHERE p.{parent_id} = {target}.{parent_col})"
        );
        let stmt = match (read_key(chunk, t), read.iter().find(|(r, _)| *r == t)) {
            (Some(_), Some((_, keys))) if keys == "[]" => continue,
            (Some(cols), Some((_, keys))) => {
                let as_read = match cols {
                    [col] => format!("{col} {IDS}"),
                    _ => format!(
                        "event_id IN (SELECT value->>0 FROM json_each(?1)) \
                         AND EXISTS (SELECT 1 FROM json_each(?1) j WHERE {DELIVERY_AS_READ})"
                    ),
                };
                db.prepare(format!(
                    "DELETE FROM {target} WHERE {as_read} AND {parent_gone} AND {}",
                    with_parent(t)
                ))
                .bind(&[text(keys)])?
            }
            (Some(_), None) => {
                return Err(worker::Error::RustError(format!(
                    "the sweep deletes {target} by the rows it read, and none were passed; nothing was deleted, the next run retries"
                )))
            }
            (None, _) => db
                .prepare(format!(
                    "DELETE FROM {target} WHERE {} AND {parent_gone}",
                    linked_rows(chunk, t)
                ))
                .bind(std::slice::from_ref(&ids))?,
        };
        stmts.push(stmt);
    }
    Ok(stmts)
}

/// The delete of a chunk's own rows that may still go; an event also
/// only while it has no linked row beyond those read (a late attempt or
/// step, or one the chunk did not read because it had none).
fn delete_own(
    db: &D1Database,
    chunk: &Chunk,
    read: &[(ArchiveTable, String)],
    ids: &wasm_bindgen::JsValue,
) -> Result<D1PreparedStatement> {
    if chunk.table != ArchiveTable::Events {
        let sql = format!(
            "DELETE FROM {} WHERE {}",
            chunk.table.as_str(),
            own_rows(chunk)
        );
        return db.prepare(sql).bind(&[ids.clone(), cutoff(chunk)]);
    }
    let keys = |t: ArchiveTable| {
        let got = read.iter().find(|(r, _)| *r == t).map(|(_, k)| k.as_str());
        text(got.unwrap_or("[]"))
    };
    let sql = format!(
        "DELETE FROM events WHERE {} AND NOT {}",
        own_rows(chunk),
        has_linked_rows(Some(["?3", "?4", "?5", "?6"]))
    );
    db.prepare(sql).bind(&[
        ids.clone(),
        cutoff(chunk),
        keys(ArchiveTable::Attempts),
        keys(ArchiveTable::EventSteps),
        keys(ArchiveTable::Payloads),
        keys(ArchiveTable::Deliveries),
    ])
}

/// One dead letter as a sweep chunk read and put it, for its guarded
/// tombstone and delete.
#[derive(Debug, Clone)]
pub struct PutEntry<'a> {
    /// Its id.
    pub id: &'a str,
    /// The key of its archived envelope.
    pub key: &'a str,
    /// How many objects its copy holds (the envelope, and its payload).
    pub objects: usize,
    /// Its status as read.
    pub status: &'a str,
    /// Its `resolved_at` as read.
    pub resolved_at: i64,
}

/// The statements that sweep the dead letters of a chunk that were put
/// (`put`): a tombstone each (`cause` swept, the status it had, its
/// archive key; an upsert, so a tombstone left by an earlier exit is
/// updated, never replaced behind the row counter's back), the archive's
/// totals, then the delete. Each statement takes an entry only while its
/// status and `resolved_at` are still as read and it may still go: an
/// entry unarchived or discarded since the read stays, and no tombstone
/// names it. Then the journal is cleared only if no entry of the chunk is
/// left in D1 ([`kept_entries`] reads those, whose copies the sweep then
/// erases before it clears the journal).
pub fn delete_entries(
    db: &D1Database,
    chunk: &Chunk,
    put: &[PutEntry<'_>],
    now_ms: i64,
) -> Result<Vec<D1PreparedStatement>> {
    let put = text(&serde_json::to_string(
        &put.iter()
            .map(|e| serde_json::json!([e.id, e.key, e.objects, e.status, e.resolved_at]))
            .collect::<Vec<_>>(),
    )?);
    let swept = text(TombstoneCause::Swept.as_str());
    let as_read = format!(
        "dead_letters.status = j.value->>3 AND dead_letters.resolved_at = j.value->>4 AND {}",
        alone(ArchiveTable::DeadLetters)
    );
    let tombstones = db.prepare(format!(
        "INSERT INTO dead_letter_tombstones (id, content_hash, event_id, source, error_code, evicted_at, cause, prior_status, archive_key) \
         SELECT dead_letters.id, dead_letters.content_hash, dead_letters.event_id, dead_letters.source, dead_letters.error_code, ?2, ?3, dead_letters.status, j.value->>1 \
         FROM json_each(?1) j JOIN dead_letters ON dead_letters.id = j.value->>0 WHERE {as_read} \
         ON CONFLICT(id) DO UPDATE SET content_hash = excluded.content_hash, event_id = excluded.event_id, source = excluded.source, error_code = excluded.error_code, \
         evicted_at = excluded.evicted_at, cause = excluded.cause, prior_status = excluded.prior_status, archive_key = excluded.archive_key"
    )).bind(&[put.clone(), int(now_ms), swept.clone()])?;
    let counted = super::sweep_state::count_entries_archived(db, put.clone(), now_ms, swept)?;
    let delete = db
        .prepare(format!(
            "DELETE FROM dead_letters WHERE id IN (SELECT value->>0 FROM json_each(?1)) \
             AND EXISTS (SELECT 1 FROM json_each(?1) j WHERE j.value->>0 = dead_letters.id AND {as_read})"
        ))
        .bind(&[put])?;
    let ids = text(&ids_json(chunk)?);
    let clear = db
        .prepare(format!(
            "UPDATE sweep_state SET journal = NULL WHERE id = 1 AND NOT EXISTS (SELECT 1 FROM dead_letters WHERE id {IDS})"
        ))
        .bind(std::slice::from_ref(&ids))?;
    let kept = db
        .prepare(format!("SELECT id FROM dead_letters WHERE id {IDS}"))
        .bind(&[ids])?;
    Ok(vec![tombstones, counted, delete, clear, kept])
}

/// The ids of a dead-letter chunk still in D1 after its delete (the last
/// statement of [`delete_entries`]).
pub fn kept_entries(rows: &Rows) -> Result<Vec<String>> {
    rows.map(|r| r.text("id"))
}
