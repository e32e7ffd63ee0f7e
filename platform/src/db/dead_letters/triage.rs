//! `dead_letters` as one `webhooks-dlq` batch reads and writes it: the
//! snapshot `hookrelay_core::dead_letter::triage::plan` decides from, and the one
//! write that applies the plan. Lists travel as one JSON array parameter
//! (`json_each`), so a statement's parameter count does not grow with the
//! batch.

use super::super::{changes, int, text};
use super::{pending, EVICTION_AT, EVICTION_ORDER};
use crate::db::eviction::{evict_statements, evicted_ids};
use crate::db::Rows;
use hookrelay_core::dead_letter::envelope::Envelope;
use hookrelay_core::dead_letter::triage::{EntryWrite, PendingEntry, StoreSnapshot, TriagePlan};
use hookrelay_core::retention::entry_archive::EntryArchive;
use hookrelay_core::retention::ndjson::Row;
use hookrelay_core::state::EntryStatus;
use serde::{Deserialize, Serialize};
use worker::{D1Database, D1PreparedStatement, Result};

fn json_list<S: AsRef<str>>(items: &[S]) -> wasm_bindgen::JsValue {
    let items: Vec<&str> = items.iter().map(AsRef::as_ref).collect();
    text(&serde_json::to_string(&items).unwrap_or_else(|_| "[]".into()))
}

/// Pending entries whose dedupe key is one of `hashes`.
pub fn same_hash_statement<S: AsRef<str>>(
    db: &D1Database,
    hashes: &[S],
) -> Result<D1PreparedStatement> {
    db.prepare("SELECT id, content_hash, created_at FROM dead_letters WHERE status = ?2 AND content_hash IN (SELECT value FROM json_each(?1))")
        .bind(&[json_list(hashes), pending()])
}

/// The snapshot statements, in the order [`snapshot_of`] reads them: which
/// of `entry_ids` are stored, the pending entries with one of `hashes`, the
/// pending depth, and the oldest pending entries this batch of `batch_len`
/// could evict against `capacity` (none while far below it).
pub fn snapshot_statements<S: AsRef<str>>(
    db: &D1Database,
    entry_ids: &[S],
    hashes: &[S],
    batch_len: usize,
    capacity: u64,
) -> Result<Vec<D1PreparedStatement>> {
    Ok(vec![
        db.prepare("SELECT id FROM dead_letters WHERE id IN (SELECT value FROM json_each(?1))")
            .bind(&[json_list(entry_ids)])?,
        same_hash_statement(db, hashes)?,
        db.prepare("SELECT count(*) AS n FROM dead_letters WHERE status = ?1")
            .bind(&[pending()])?,
        // The eviction order's time as `created_at`: the plan evicts by it.
        db.prepare(format!("SELECT id, content_hash, {EVICTION_AT} AS created_at FROM dead_letters WHERE status = ?1 ORDER BY {EVICTION_ORDER} \
                    LIMIT max(0, min(?2, (SELECT count(*) FROM dead_letters WHERE status = ?1) + ?2 - ?3))"))
            .bind(&[pending(), int(batch_len as i64), int(capacity as i64)])?,
    ])
}

#[derive(Deserialize)]
struct PendingRow {
    id: String,
    content_hash: String,
    created_at: f64,
}

#[derive(Deserialize)]
struct Id {
    id: String,
}

#[derive(Deserialize)]
struct Count {
    n: f64,
}

/// Reads [`same_hash_statement`]'s result.
pub fn same_hash_of(result: &Rows) -> Result<Vec<PendingEntry>> {
    Ok(result
        .decode::<PendingRow>()?
        .into_iter()
        .map(|r| PendingEntry {
            id: r.id,
            content_hash: r.content_hash,
            created_at_ms: r.created_at as i64,
        })
        .collect())
}

fn count_of(result: &Rows) -> Result<u64> {
    Ok(result.decode::<Count>()?.first().map_or(0, |c| c.n as u64))
}

/// Reads the results of [`snapshot_statements`], in their order.
pub fn snapshot_of(results: &[Rows]) -> Result<StoreSnapshot> {
    let [ids, same_hash, depth, oldest] = results else {
        return Err(worker::Error::RustError(format!(
            "the DLQ snapshot read answered {} results, not 4",
            results.len()
        )));
    };
    Ok(StoreSnapshot {
        stored_ids: ids.decode::<Id>()?.into_iter().map(|r| r.id).collect(),
        same_hash: same_hash_of(same_hash)?,
        pending: count_of(depth)?,
        oldest: same_hash_of(oldest)?,
    })
}

/// What the batch write did.
pub struct TriageWrite {
    /// Rows changed by each message's statement, in batch order (0 for a
    /// message that needed none).
    pub changes: Vec<usize>,
    /// The entries evicted, as deleted.
    pub evicted: Vec<String>,
}

/// One row of a run of inserts. The envelope travels as its JSON text, so
/// it is stored exactly as serialized.
#[derive(Serialize)]
struct InsertRow<'a> {
    id: &'a str,
    kind: &'a str,
    entry_kind: &'a str,
    destination: Option<&'a str>,
    event_id: Option<&'a str>,
    idempotency_key: Option<&'a str>,
    source: Option<&'a str>,
    queue_message_id: &'a str,
    code: &'a str,
    class: &'a str,
    signature: &'a str,
    attempts: u32,
    hash: &'a str,
    envelope: String,
    exempt: &'a [String],
}

/// Inserts a run of consecutive new entries in one statement, each unless
/// a pending entry (other than itself and its `exempt` ids) has its dedupe
/// key; `RETURNING` names the rows inserted. The rows are read whole before
/// any is written (the select reads the table it inserts into), so one row
/// of a run never guards against another: the plan never puts two pending
/// copies of one key in a run except where it evicts the first.
const INSERT_ROWS: &str = "INSERT INTO dead_letters (id, kind, entry_kind, destination, status, event_id, idempotency_key, source, queue_message_id, error_code, error_class, error_signature, attempts, content_hash, created_at, last_seen_at, envelope) \
     SELECT r.value->>'id', r.value->>'kind', r.value->>'entry_kind', r.value->>'destination', ?3, r.value->>'event_id', r.value->>'idempotency_key', r.value->>'source', r.value->>'queue_message_id', r.value->>'code', r.value->>'class', r.value->>'signature', r.value->>'attempts', r.value->>'hash', ?2, ?2, r.value->>'envelope' \
     FROM json_each(?1) AS r \
     WHERE NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.content_hash = r.value->>'hash' AND d.status = ?3 AND d.id <> r.value->>'id' AND d.id NOT IN (SELECT value FROM json_each(r.value->'exempt'))) \
     ON CONFLICT(id) DO NOTHING RETURNING id";

/// Bytes of row JSON per insert statement, well below D1's 2 MB limit on
/// one bound string: a batch of large hand-offs takes several statements.
const MAX_ROWS_JSON: usize = 1_000_000;

fn insert_row(env: &Envelope, exempt: &[String]) -> Result<String> {
    Ok(serde_json::to_string(&InsertRow {
        id: &env.id,
        kind: env.kind.as_str(),
        entry_kind: env.identity.kind.as_str(),
        destination: env.identity.destination.as_deref(),
        event_id: env.identity.event_id.as_deref(),
        idempotency_key: env.identity.idempotency_key.as_deref(),
        source: env.identity.source.as_deref(),
        queue_message_id: &env.identity.queue_message_id,
        code: env.failure.code.as_str(),
        class: env.failure.class.as_str(),
        signature: &env.failure.signature,
        attempts: env.delivery.attempts,
        hash: &env.input.content_hash,
        envelope: serde_json::to_string(env)?,
        exempt,
    })?)
}

fn mark_seen(db: &D1Database, env: &Envelope, now: i64) -> Result<D1PreparedStatement> {
    db.prepare("UPDATE dead_letters SET seen_count = seen_count + 1, last_seen_at = ?1 WHERE content_hash = ?2 AND status = ?4 AND id <> ?3")
        .bind(&[int(now), text(&env.input.content_hash), text(&env.id), pending()])
}

/// Where a message's effect shows in the batch's results.
enum Slot {
    /// No statement.
    None,
    /// The rows changed by statement `i`.
    Changes(usize),
    /// Whether insert statement `i` returned its id.
    Returned(usize),
}

/// The statements of one plan, and where each message's effect shows.
struct Statements<'a> {
    db: &'a D1Database,
    now: i64,
    list: Vec<D1PreparedStatement>,
    slots: Vec<Slot>,
    rows: String,
}

impl Statements<'_> {
    fn insert(&mut self, row: String) -> Result<()> {
        if !self.rows.is_empty() && self.rows.len() + row.len() > MAX_ROWS_JSON {
            self.flush()?;
        }
        if !self.rows.is_empty() {
            self.rows.push(',');
        }
        self.rows.push_str(&row);
        self.slots.push(Slot::Returned(self.list.len()));
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let rows = format!("[{}]", std::mem::take(&mut self.rows));
        self.list.push(self.db.prepare(INSERT_ROWS).bind(&[
            text(&rows),
            int(self.now),
            pending(),
        ])?);
        Ok(())
    }

    fn push(&mut self, statement: D1PreparedStatement) -> Result<()> {
        self.flush()?;
        self.slots.push(Slot::Changes(self.list.len()));
        self.list.push(statement);
        Ok(())
    }
}

/// The row [`INSERT_ROWS`] writes for `env` at `now`, as its archived copy
/// when the batch that inserts it also evicts it (it is never in D1 before
/// the write). Columns left to their defaults are absent, so a restore
/// writes the defaults again.
pub fn new_entry_row(env: &Envelope, now: i64) -> Result<Row> {
    let row = serde_json::json!({
        "id": env.id,
        "kind": env.kind.as_str(),
        "entry_kind": env.identity.kind.as_str(),
        "destination": env.identity.destination,
        "status": EntryStatus::Pending.as_str(),
        "event_id": env.identity.event_id,
        "idempotency_key": env.identity.idempotency_key,
        "source": env.identity.source,
        "queue_message_id": env.identity.queue_message_id,
        "error_code": env.failure.code.as_str(),
        "error_class": env.failure.class.as_str(),
        "error_signature": env.failure.signature,
        "attempts": env.delivery.attempts,
        "content_hash": env.input.content_hash,
        "created_at": now,
        "last_seen_at": now,
        "envelope": serde_json::to_string(env)?,
    });
    Ok(serde_json::from_value(row)?)
}

/// Applies `plan` to `envelopes` (one per plan entry, same order) in one
/// transaction: each message's statement in batch order (consecutive new
/// entries share one insert), then the evictions (tombstones first) of the
/// entries whose archive copy is written (`archived`).
pub async fn write_triage(
    db: &D1Database,
    envelopes: &[Envelope],
    plan: &TriagePlan,
    archived: &[EntryArchive],
    now: i64,
) -> Result<TriageWrite> {
    let mut st = Statements {
        db,
        now,
        list: Vec::new(),
        slots: Vec::with_capacity(envelopes.len()),
        rows: String::new(),
    };
    for (env, entry) in envelopes.iter().zip(&plan.entries) {
        match &entry.write {
            EntryWrite::Insert { exempt } => st.insert(insert_row(env, exempt)?)?,
            EntryWrite::MarkSeen => st.push(mark_seen(db, env, now)?)?,
            EntryWrite::Nothing => st.slots.push(Slot::None),
        }
    }
    st.flush()?;
    let evicting = !archived.is_empty();
    let mut statements = st.list;
    // A delivery's dead letter closes its row and sums its event up again
    // in the same transaction (after the entries: no slot reads them).
    for env in envelopes {
        if let Some((event_id, destination)) = env.closes_delivery() {
            statements.extend(crate::db::deliveries::close_dead_lettered(
                db,
                (event_id, destination),
                env.failure.code.as_str(),
                now,
            )?);
        }
    }
    if evicting {
        statements.extend(evict_statements(db, archived, now)?);
    }
    let results = crate::db::batch(db, statements).await?;
    let evicted = match (evicting, results.last()) {
        (true, Some(deleted)) => evicted_ids(deleted)?,
        _ => Vec::new(),
    };
    Ok(TriageWrite {
        changes: changes_of(&st.slots, envelopes, &results)?,
        evicted,
    })
}

fn ids_of(result: &Rows) -> Result<Vec<String>> {
    Ok(result.decode::<Id>()?.into_iter().map(|r| r.id).collect())
}

/// Rows changed per message: an insert counts 1 when its id came back.
fn changes_of(slots: &[Slot], envelopes: &[Envelope], results: &[Rows]) -> Result<Vec<usize>> {
    // (statement, ids it returned), read once per insert statement.
    let mut returned: Vec<(usize, Vec<String>)> = Vec::new();
    for slot in slots {
        if let Slot::Returned(i) = *slot {
            if !returned.iter().any(|(j, _)| *j == i) {
                let ids = results.get(i).map(ids_of).transpose()?.unwrap_or_default();
                returned.push((i, ids));
            }
        }
    }
    Ok(slots
        .iter()
        .zip(envelopes)
        .map(|(slot, env)| match *slot {
            Slot::None => 0,
            Slot::Changes(i) => results.get(i).map_or(0, changes),
            Slot::Returned(i) => usize::from(
                returned
                    .iter()
                    .any(|(j, ids)| *j == i && ids.contains(&env.id)),
            ),
        })
        .collect())
}
