//! `dead_letters` as one `webhooks-dlq` batch reads and writes it: the
//! snapshot `hookrelay_core::triage_plan::plan` decides from, and the one
//! write that applies the plan. Lists travel as one JSON array parameter
//! (`json_each`), so a statement's parameter count does not grow with the
//! batch.

use super::super::{changes, int, opt_text, text};
use super::pending;
use hookrelay_core::envelope::Envelope;
use hookrelay_core::triage_plan::{EntryWrite, PendingEntry, StoreSnapshot, TriagePlan};
use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement, D1Result, Result};

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
        db.prepare("SELECT id, content_hash, created_at FROM dead_letters WHERE status = ?1 ORDER BY created_at, id \
                    LIMIT max(0, min(?2, (SELECT count(*) FROM dead_letters WHERE status = ?1) + ?2 - ?3))")
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
pub fn same_hash_of(result: &D1Result) -> Result<Vec<PendingEntry>> {
    Ok(result
        .results::<PendingRow>()?
        .into_iter()
        .map(|r| PendingEntry {
            id: r.id,
            content_hash: r.content_hash,
            created_at_ms: r.created_at as i64,
        })
        .collect())
}

fn count_of(result: &D1Result) -> Result<u64> {
    Ok(result.results::<Count>()?.first().map_or(0, |c| c.n as u64))
}

/// Reads the results of [`snapshot_statements`], in their order.
pub fn snapshot_of(results: &[D1Result]) -> Result<StoreSnapshot> {
    let [ids, same_hash, depth, oldest] = results else {
        return Err(worker::Error::RustError(format!(
            "the DLQ snapshot read answered {} results, not 4",
            results.len()
        )));
    };
    Ok(StoreSnapshot {
        stored_ids: ids.results::<Id>()?.into_iter().map(|r| r.id).collect(),
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
    /// Pending entries after the write.
    pub pending: u64,
}

fn insert(
    db: &D1Database,
    env: &Envelope,
    exempt: &[String],
    now: i64,
) -> Result<D1PreparedStatement> {
    db.prepare(
        "INSERT INTO dead_letters (id, kind, status, event_id, idempotency_key, source, queue_message_id, error_code, error_class, error_signature, attempts, content_hash, created_at, last_seen_at, envelope) \
         SELECT ?1, ?2, ?14, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12, ?13 \
         WHERE NOT EXISTS (SELECT 1 FROM dead_letters WHERE content_hash = ?11 AND status = ?14 AND id <> ?1 AND id NOT IN (SELECT value FROM json_each(?15))) \
         ON CONFLICT(id) DO NOTHING",
    )
    .bind(&[
        text(&env.id),
        text(env.kind.as_str()),
        opt_text(env.identity.event_id.as_deref()),
        opt_text(env.identity.idempotency_key.as_deref()),
        opt_text(env.identity.source.as_deref()),
        text(&env.identity.queue_message_id),
        text(env.failure.code.as_str()),
        text(env.failure.class.as_str()),
        text(&env.failure.signature),
        int(i64::from(env.delivery.attempts)),
        text(&env.input.content_hash),
        int(now),
        text(&serde_json::to_string(env)?),
        pending(),
        json_list(exempt),
    ])
}

fn mark_seen(db: &D1Database, env: &Envelope, now: i64) -> Result<D1PreparedStatement> {
    db.prepare("UPDATE dead_letters SET seen_count = seen_count + 1, last_seen_at = ?1 WHERE content_hash = ?2 AND status = ?4 AND id <> ?3")
        .bind(&[int(now), text(&env.input.content_hash), text(&env.id), pending()])
}

/// Applies `plan` to `envelopes` (one per plan entry, same order) in one
/// transaction: each message's statement in batch order, then the
/// evictions (tombstones first), then the pending count.
pub async fn write_triage(
    db: &D1Database,
    envelopes: &[Envelope],
    plan: &TriagePlan,
    now: i64,
) -> Result<TriageWrite> {
    let mut statements = Vec::with_capacity(envelopes.len() + 3);
    let mut slots = Vec::with_capacity(envelopes.len());
    for (env, entry) in envelopes.iter().zip(&plan.entries) {
        let statement = match &entry.write {
            EntryWrite::Insert { exempt } => insert(db, env, exempt, now)?,
            EntryWrite::MarkSeen => mark_seen(db, env, now)?,
            EntryWrite::Nothing => {
                slots.push(None);
                continue;
            }
        };
        slots.push(Some(statements.len()));
        statements.push(statement);
    }
    let evicting = !plan.evict.is_empty();
    if evicting {
        let ids = json_list(&plan.evict);
        statements.push(super::super::tombstones::write_for(db, &ids, now)?);
        statements.push(
            db.prepare("DELETE FROM dead_letters WHERE id IN (SELECT value FROM json_each(?1)) AND status = ?2 RETURNING id")
                .bind(&[ids, pending()])?,
        );
    }
    statements.push(
        db.prepare("SELECT count(*) AS n FROM dead_letters WHERE status = ?1")
            .bind(&[pending()])?,
    );
    let results = db.batch(statements).await?;
    let changed = |slot: &Option<usize>| slot.and_then(|i| results.get(i)).map_or(0, changes);
    let evicted = match (evicting, results.len().checked_sub(2)) {
        (true, Some(i)) => results[i]
            .results::<Id>()?
            .into_iter()
            .map(|r| r.id)
            .collect(),
        _ => Vec::new(),
    };
    Ok(TriageWrite {
        changes: slots.iter().map(changed).collect(),
        evicted,
        pending: results.last().map(count_of).transpose()?.unwrap_or(0),
    })
}
