//! The retention sweep's SQL (DESIGN §5), for every swept table: the
//! candidate read, the read of a chunk's rows by id, and the deletes.
//!
//! One file rather than a hunk in each table's file: the statements share
//! one shape (ids travel as one JSON array through `json_each`, so a
//! statement binds at most four parameters whatever the chunk), and which
//! table goes with which is [`hookrelay_core::retention::tables`]'s rule,
//! applied here in one place. What keeps a row (a parked event for a
//! drain's destination, a dead letter for a payload) is filtered in SQL, so
//! rows that must stay never crowd out older rows that may go.
//!
//! States are bound from `core::state` (`as_str()`), never spelled here;
//! the one exception is formatted from `DeliveryStatus::Parked.as_str()`
//! so that the partial index `events_parked` serves the drains' check.

use super::{batch, int, text, Rows};
use hookrelay_core::retention::plan::{Candidate, Candidates, Chunk, ChunkQuery};
use hookrelay_core::retention::tables::{
    RowState, FINISHED_JOB, RESOLVED_ENTRY, SWEEPABLE_DELIVERY,
};
use hookrelay_core::state::{
    AlarmState, ArchiveTable, DeliveryStatus, EntryStatus, JobStatus, TombstoneCause,
};
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
    /// The row's `at` as read (its key's day).
    at_expr: &'static str,
    /// The state column, if the table has one.
    state: Option<&'static str>,
    /// Its body's bytes.
    bytes: &'static str,
    /// Whether linked rows refer to it (1 or 0).
    linked: &'static str,
    /// What else a candidate must satisfy.
    filter: String,
}

fn spec(table: ArchiveTable, column: &'static str) -> Spec {
    let plain = |id, int_ids| Spec {
        id,
        id_expr: if int_ids { "CAST(id AS TEXT)" } else { id },
        int_ids,
        at_expr: "",
        state: None,
        bytes: "0",
        linked: "0",
        filter: String::new(),
    };
    let mut s = match table {
        ArchiveTable::Events => Spec {
            state: Some("delivery_status"),
            bytes: "body_bytes",
            linked: EVENT_HAS_LINKED_ROWS,
            ..plain("event_id", false)
        },
        ArchiveTable::Attempts => Spec {
            filter: "AND (event_id IS NULL OR NOT EXISTS (SELECT 1 FROM events e WHERE e.event_id = attempts.event_id))".into(),
            ..plain("id", true)
        },
        ArchiveTable::Payloads => Spec {
            bytes: "body_bytes",
            filter: format!("AND NOT EXISTS (SELECT 1 FROM events e WHERE e.event_id = payloads.event_id) {}", NOT_HELD_BY_ENTRY),
            ..plain("event_id", false)
        },
        ArchiveTable::DeadLetters => Spec {
            at_expr: "created_at",
            state: Some("status"),
            ..plain("id", false)
        },
        ArchiveTable::Audit | ArchiveTable::EventSteps => plain("id", true),
        ArchiveTable::Jobs => Spec {
            state: Some("status"),
            // Entries are not checked: a finished job always has some.
            linked: "1",
            ..plain("id", false)
        },
        ArchiveTable::Drains => Spec {
            filter: format!(
                "AND NOT EXISTS (SELECT 1 FROM events e WHERE e.parked_destination = drains.destination AND e.delivery_status = '{}')",
                DeliveryStatus::Parked.as_str()
            ),
            ..plain("destination", false)
        },
        ArchiveTable::Alarms => Spec {
            id_expr: "(id || '@' || since)",
            state: Some("state"),
            ..plain("(id || '@' || since)", false)
        },
        ArchiveTable::Tombstones | ArchiveTable::JobEntries => plain("id", false),
    };
    if s.at_expr.is_empty() {
        s.at_expr = column;
    }
    s
}

/// Whether an event has rows its chunk would move with it (each by its
/// index on `event_id`; a payload a dead letter holds stays, so it does not
/// count). The candidate read answers it, so a chunk without any skips the
/// linked tables; the events delete refuses an event for which it still
/// holds after the linked deletes of its batch: such rows were written
/// after the chunk's read. That event was put with the chunk and is
/// archived again by a later chunk with its new rows: a second copy, never
/// a loss.
const EVENT_HAS_LINKED_ROWS: &str =
    "(EXISTS (SELECT 1 FROM attempts a WHERE a.event_id = events.event_id) \
     OR EXISTS (SELECT 1 FROM event_steps s WHERE s.event_id = events.event_id) \
     OR EXISTS (SELECT 1 FROM payloads p WHERE p.event_id = events.event_id \
       AND NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.event_id = p.event_id)))";

/// A payload a dead letter in D1 still refers to stays (its envelope's
/// claim-checked body; `dead_letters_by_event`, migration 0011).
const NOT_HELD_BY_ENTRY: &str =
    "AND NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.event_id = payloads.event_id)";

/// The states a table's candidates may be read in, as stored names.
fn sweepable_states(table: ArchiveTable) -> Vec<&'static str> {
    match table {
        ArchiveTable::Events => SWEEPABLE_DELIVERY.iter().map(|s| s.as_str()).collect(),
        ArchiveTable::DeadLetters => RESOLVED_ENTRY.iter().map(|s| s.as_str()).collect(),
        ArchiveTable::Jobs => FINISHED_JOB.iter().map(|s| s.as_str()).collect(),
        ArchiveTable::Alarms => vec![AlarmState::Resolved.as_str()],
        _ => Vec::new(),
    }
}

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
        .map(|(q, rows)| Ok((q.clone(), decode_candidates(q, rows)?)))
        .collect()
}

/// The statement that reads the candidates for `q`, oldest first, at most
/// `q.limit`.
pub fn candidates_statement(db: &D1Database, q: &ChunkQuery) -> Result<D1PreparedStatement> {
    let s = spec(q.table, q.column);
    let (state_sel, state_where) = match s.state {
        Some(col) => (
            col,
            format!("AND {col} IN (SELECT value FROM json_each(?3))"),
        ),
        None => ("NULL", String::new()),
    };
    let sql = format!(
        "SELECT {} AS id, {} AS at, {state_sel} AS state, {} AS bytes, {} AS linked FROM {} \
         WHERE {col} IS NOT NULL AND {col} < ?1 {state_where} {} ORDER BY {col}, {} LIMIT ?2",
        s.id_expr,
        s.at_expr,
        s.bytes,
        s.linked,
        q.table.as_str(),
        s.filter,
        s.id,
        col = q.column,
    );
    let mut params = vec![int(q.before), int(q.limit as i64)];
    if s.state.is_some() {
        params.push(text(&serde_json::to_string(&sweepable_states(q.table))?));
    }
    db.prepare(&sql).bind(&params)
}

fn decode_candidates(q: &ChunkQuery, rows: &Rows) -> Result<Vec<Candidate>> {
    rows.map(|r| {
        let state = row_state(q.table, r.opt_text("state")?.as_deref())?;
        Ok(Candidate {
            id: r.text("id")?,
            at: r.int("at")?,
            state,
            held: false,
            bytes: r.int("bytes")?.max(0) as u64,
            linked: r.int("linked")? != 0,
        })
    })
}

fn row_state(table: ArchiveTable, state: Option<&str>) -> Result<RowState> {
    let bad = |e: hookrelay_core::state::UnknownState| {
        worker::Error::RustError(format!("{} row: {e}", table.as_str()))
    };
    Ok(match (table, state) {
        (ArchiveTable::Events, Some(s)) => {
            RowState::Delivery(DeliveryStatus::parse(s).map_err(bad)?)
        }
        (ArchiveTable::DeadLetters, Some(s)) => {
            RowState::Entry(EntryStatus::parse(s).map_err(bad)?)
        }
        (ArchiveTable::Jobs, Some(s)) => RowState::Job(JobStatus::parse(s).map_err(bad)?),
        (ArchiveTable::Alarms, Some(s)) => RowState::Alarm(AlarmState::parse(s).map_err(bad)?),
        _ => RowState::Plain,
    })
}

/// The chunk's ids as one JSON array, numbers for integer ids.
fn ids_json(chunk: &Chunk, int_ids: bool) -> Result<String> {
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

/// Which rows of `target` go with `chunk`, as a WHERE clause over `?1`
/// (the chunk's ids): the chunk's own rows, or the linked rows by parent id.
fn chunk_where(chunk: &Chunk, target: ArchiveTable) -> String {
    const IDS: &str = "IN (SELECT value FROM json_each(?1))";
    match (chunk.table, target) {
        (ArchiveTable::Events, ArchiveTable::Payloads) => {
            format!("event_id {IDS} {NOT_HELD_BY_ENTRY}")
        }
        (ArchiveTable::Events, _) if target != chunk.table => format!("event_id {IDS}"),
        (ArchiveTable::Jobs, ArchiveTable::JobEntries) => format!("job_id {IDS}"),
        _ => format!("{} {IDS}", spec(chunk.table, "").id),
    }
}

/// The tables a chunk reads and deletes: its own, then the linked ones
/// when any of its rows had linked rows.
pub fn chunk_tables(chunk: &Chunk) -> Vec<ArchiveTable> {
    let mut tables = vec![chunk.table];
    if chunk.linked {
        tables.extend(hookrelay_core::retention::tables::linked(chunk.table));
    }
    tables
}

/// The statements that read the chunk's rows, for one batch (the sweep
/// puts its journal write in front of them): per table of
/// [`chunk_tables`], and for dead letters also the claim-checked payloads
/// their envelopes name. Decode each answer with [`Rows::json_objects`].
pub fn read_statements(db: &D1Database, chunk: &Chunk) -> Result<Vec<D1PreparedStatement>> {
    let ids = ids_json(chunk, spec(chunk.table, "").int_ids)?;
    let mut stmts = Vec::new();
    for t in chunk_tables(chunk) {
        let sql = format!(
            "SELECT * FROM {} WHERE {}",
            t.as_str(),
            chunk_where(chunk, t)
        );
        stmts.push(db.prepare(&sql).bind(&[text(&ids)])?);
    }
    if chunk.table == ArchiveTable::DeadLetters {
        stmts.push(db.prepare("SELECT * FROM payloads WHERE event_id IN (SELECT d.event_id FROM dead_letters d WHERE d.id IN (SELECT value FROM json_each(?1)))").bind(&[text(&ids)])?);
    }
    Ok(stmts)
}

/// The key column of a table whose rows a chunk of events deletes by what
/// it read (so a row written between the read and the delete stays).
fn read_key(chunk: &Chunk, table: ArchiveTable) -> Option<&'static str> {
    match (chunk.table, table) {
        (ArchiveTable::Events, ArchiveTable::Attempts | ArchiveTable::EventSteps) => Some("id"),
        (ArchiveTable::Events, ArchiveTable::Payloads) => Some("event_id"),
        _ => None,
    }
}

/// For a linked table of `chunk` deleted by what was read: the key column's
/// values of the rows read (`results`, as D1 answered them), as a JSON
/// array for [`delete_chunk`]. `None` for a table deleted by the chunk's ids.
pub fn read_keys(
    chunk: &Chunk,
    table: ArchiveTable,
    results: &js_sys::Array,
) -> Result<Option<String>> {
    let Some(column) = read_key(chunk, table) else {
        return Ok(None);
    };
    let column = wasm_bindgen::JsValue::from_str(column);
    let keys: js_sys::Array = results
        .iter()
        .map(|row| js_sys::Reflect::get(&row, &column))
        .collect::<std::result::Result<_, _>>()?;
    let json = js_sys::JSON::stringify(&keys)?;
    Ok(json.as_string())
}

/// The statements that delete the chunk's rows (linked tables first), and
/// for dead letters first the tombstones (`cause` swept, the status each
/// had, its archive key); `entry_keys` are the entries' keys, in chunk
/// order. A linked table named in `read` loses only the rows read (by
/// [`read_keys`]); one read empty is not touched. An event is deleted only
/// while it is still sweepable and has no linked rows left
/// ([`EVENT_HAS_LINKED_ROWS`]).
pub fn delete_chunk(
    db: &D1Database,
    chunk: &Chunk,
    entry_keys: &[String],
    read: &[(ArchiveTable, String)],
    now_ms: i64,
) -> Result<Vec<D1PreparedStatement>> {
    let ids = ids_json(chunk, spec(chunk.table, "").int_ids)?;
    let mut stmts = Vec::new();
    if chunk.table == ArchiveTable::DeadLetters {
        let pairs: Vec<(&str, &str)> = chunk
            .rows
            .iter()
            .zip(entry_keys)
            .map(|(r, k)| (r.id.as_str(), k.as_str()))
            .collect();
        stmts.push(db.prepare(
            "INSERT OR REPLACE INTO dead_letter_tombstones (id, content_hash, event_id, source, error_code, evicted_at, cause, prior_status, archive_key) \
             SELECT d.id, d.content_hash, d.event_id, d.source, d.error_code, ?2, ?3, d.status, json_extract(j.value, '$[1]') \
             FROM json_each(?1) j JOIN dead_letters d ON d.id = json_extract(j.value, '$[0]')",
        ).bind(&[text(&serde_json::to_string(&pairs)?), int(now_ms), text(TombstoneCause::Swept.as_str())])?);
    }
    for t in chunk_tables(chunk).into_iter().rev() {
        let name = t.as_str();
        let stmt = match (read_key(chunk, t), read.iter().find(|(r, _)| *r == t)) {
            (Some(_), Some((_, keys))) if keys == "[]" => continue,
            (Some(col), Some((_, keys))) => db
                .prepare(format!("DELETE FROM {name} WHERE {col} IN (SELECT value FROM json_each(?1))"))
                .bind(&[text(keys)])?,
            (Some(_), None) => {
                return Err(worker::Error::RustError(format!(
                    "the sweep deletes {name} by the rows it read, and none were passed; nothing was deleted, the next run retries"
                )))
            }
            (None, _) if t == ArchiveTable::Events => {
                let states = serde_json::to_string(&sweepable_states(t))?;
                // Still sweepable (`?2`): an event that turned in flight
                // since the read stays, never deleted mid-delivery.
                db.prepare(format!(
                    "DELETE FROM events WHERE {} AND delivery_status IN (SELECT value FROM json_each(?2)) AND NOT {EVENT_HAS_LINKED_ROWS}",
                    chunk_where(chunk, t)
                ))
                    .bind(&[text(&ids), text(&states)])?
            }
            (None, _) => db
                .prepare(format!("DELETE FROM {name} WHERE {}", chunk_where(chunk, t)))
                .bind(&[text(&ids)])?,
        };
        stmts.push(stmt);
    }
    Ok(stmts)
}
