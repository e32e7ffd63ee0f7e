//! `dead_letters`: one row per dead letter, the whole envelope kept as JSON
//! beside the columns used for filtering, dedupe and capacity.

use super::{int, text, Where};
use crate::db::Query;
use hookrelay_core::admin::query::{Cursor, DeadLetterFilter, TimeRange};
use hookrelay_core::dead_letter::arrivals;
use hookrelay_core::state::error_code::{ErrorCode, FailureClass};
use hookrelay_core::state::{EntryKind, EntryStatus};
use serde::{Deserialize, Serialize};
use worker::{D1Database, D1PreparedStatement, Result};

/// The listing columns of a dead-letter entry (not the envelope).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EntrySummary {
    /// `dlq_…`, derived from the original queue message id.
    pub id: String,
    /// `ingest` or `delivery` (column `entry_kind`).
    pub kind: String,
    /// How the message reached the DLQ: `poison_handoff` or
    /// `retries_exhausted` (column `kind`).
    pub arrival: String,
    /// The destination whose delivery failed (kind `delivery`).
    pub destination: Option<String>,
    /// Where the entry stands.
    pub status: EntryStatus,
    /// The event, when the message named one.
    pub event_id: Option<String>,
    /// Its idempotency key.
    pub idempotency_key: Option<String>,
    /// Its source.
    pub source: Option<String>,
    /// The root-cause code.
    pub error_code: String,
    /// The code's class.
    pub error_class: String,
    /// `sig_…`, for grouping.
    pub error_signature: String,
    /// SHA-256 of source and payload, for dedupe.
    pub content_hash: String,
    /// Consumer attempts before it was dead-lettered.
    pub attempts: i64,
    /// Times an identical dead letter arrived.
    pub seen_count: i64,
    /// Failed replays so far.
    pub replay_attempts: i64,
    /// When it was dead-lettered (unix ms).
    pub created_at: i64,
    /// When an identical one was last seen.
    pub last_seen_at: i64,
    /// When it was replayed successfully.
    pub replayed_at: Option<i64>,
    /// When a restore brought it back from the archive (its place in the
    /// eviction order, [`EVICTION_ORDER`]; `created_at` stays when it was
    /// dead-lettered).
    pub restored_at: Option<i64>,
}

const SUMMARY_COLUMNS: &str = "id, entry_kind AS kind, kind AS arrival, destination, status, event_id, idempotency_key, source, error_code, error_class, error_signature, content_hash, attempts, seen_count, replay_attempts, created_at, last_seen_at, replayed_at, restored_at";

/// The order capacity eviction takes pending entries in, oldest first: by
/// when each entered the pending store, dead-lettered or restored (a
/// restored entry is not the next one evicted), over the index
/// `dead_letters_by_eviction` (migration 0013), which spells the same
/// expression.
pub const EVICTION_ORDER: &str = "COALESCE(restored_at, created_at), id";

/// Where an entry's pending time for eviction is read (`AS created_at` in
/// the triage snapshot): the first term of [`EVICTION_ORDER`].
pub const EVICTION_AT: &str = "COALESCE(restored_at, created_at)";

/// A whole entry: the summary plus the envelope JSON.
#[derive(Debug, Clone)]
pub struct EntryRow {
    /// The listing columns.
    pub summary: EntrySummary,
    /// The envelope, as stored.
    pub envelope: String,
}

pub mod dead_letter_figures;
mod triage;
pub use triage::{
    new_entry_row, same_hash_of, same_hash_statement, snapshot_of, snapshot_statements,
    write_triage, TriageWrite,
};

fn pending() -> wasm_bindgen::JsValue {
    text(EntryStatus::Pending.as_str())
}

/// One entry with its envelope, in one round trip. The summary and the
/// envelope are two statements, not one row read through
/// `#[serde(flatten)]`, whose buffering costs the DLQ worker's wasm more
/// than the second statement costs D1.
pub async fn get(db: &D1Database, id: &str) -> Result<Option<EntryRow>> {
    #[derive(Deserialize)]
    struct Envelope {
        envelope: String,
    }
    let summary = db
        .prepare(format!(
            "SELECT {SUMMARY_COLUMNS} FROM dead_letters WHERE id = ?1"
        ))
        .bind(&[text(id)])?;
    let envelope = db
        .prepare("SELECT envelope FROM dead_letters WHERE id = ?1")
        .bind(&[text(id)])?;
    let results = crate::db::batch(db, vec![summary, envelope]).await?;
    let (Some(s), Some(e)) = (results.first(), results.get(1)) else {
        return Ok(None);
    };
    let summary = s.decode::<EntrySummary>()?.into_iter().next();
    let envelope = e.decode::<Envelope>()?.into_iter().next();
    Ok(summary.zip(envelope).map(|(summary, e)| EntryRow {
        summary,
        envelope: e.envelope,
    }))
}

pub(crate) fn filtered(w: &mut Where, filter: &DeadLetterFilter) {
    w.eq("status", filter.status.map(EntryStatus::as_str))
        .eq("error_class", filter.class.map(FailureClass::as_str))
        .eq("error_code", filter.code.map(ErrorCode::as_str))
        .eq("source", filter.source.as_deref())
        .eq("destination", filter.destination.as_deref())
        .eq("entry_kind", filter.kind.map(EntryKind::as_str))
        .eq("error_signature", filter.signature.as_deref());
}

/// When the entry was dead-lettered (`created_at`), within `range`.
fn within(w: &mut Where, range: &TimeRange) {
    w.cmp_int("created_at", ">=", range.since_ms)
        .cmp_int("created_at", "<=", range.until_ms);
}

/// Newest first, dead-lettered within `range`, after `cursor`, at most
/// `limit + 1` rows.
pub async fn list(
    db: &D1Database,
    filter: &DeadLetterFilter,
    range: &TimeRange,
    cursor: Option<&Cursor>,
    limit: u32,
) -> Result<Vec<EntrySummary>> {
    page(
        db,
        SUMMARY_COLUMNS,
        (filter, range),
        cursor,
        limit,
        Order::NewestFirst,
    )
    .await
}

/// Which way a keyset page runs over `(created_at, id)`.
enum Order {
    NewestFirst,
    OldestFirst,
}

/// One keyset page of `columns`: the rows matching `filter` (dead-lettered
/// within its range) after `cursor` in `order`, at most `limit + 1` of them.
async fn page<T: serde::de::DeserializeOwned>(
    db: &D1Database,
    columns: &str,
    (filter, range): (&DeadLetterFilter, &TimeRange),
    cursor: Option<&Cursor>,
    limit: u32,
    order: Order,
) -> Result<Vec<T>> {
    let (after, direction) = match order {
        Order::NewestFirst => ("<", "DESC"),
        Order::OldestFirst => (">", "ASC"),
    };
    let mut w = Where::default();
    filtered(&mut w, filter);
    within(&mut w, range);
    if let Some(c) = cursor {
        w.after("created_at, id", after, c.at_ms, text(&c.id));
    }
    let (clause, limit) = w.finish(limit);
    let sql = format!("SELECT {columns} FROM dead_letters {clause} ORDER BY created_at {direction}, id {direction} LIMIT {limit}");
    db.prepare(sql).bind(&w.params)?.query().await?.decode()
}

/// A pending entry chosen for replay-all.
#[derive(Debug, Clone, Deserialize)]
pub struct CandidateRow {
    /// The entry.
    pub id: String,
    /// For dedupe within a run.
    pub content_hash: String,
    /// Its keyset position.
    pub created_at: i64,
}

fn pending_filter(filter: &DeadLetterFilter) -> DeadLetterFilter {
    DeadLetterFilter {
        status: Some(EntryStatus::Pending),
        ..filter.clone()
    }
}

/// Pending entries oldest first (the order they failed in), after `cursor`.
pub async fn replay_candidates(
    db: &D1Database,
    filter: &DeadLetterFilter,
    cursor: Option<&Cursor>,
    limit: u32,
) -> Result<Vec<CandidateRow>> {
    let pending = pending_filter(filter);
    let columns = "id, content_hash, created_at";
    let all_time = TimeRange::default();
    page(
        db,
        columns,
        (&pending, &all_time),
        cursor,
        limit,
        Order::OldestFirst,
    )
    .await
}

/// The pending depth (a statement, for a restore's read batch).
pub fn count_pending_statement(db: &D1Database) -> Result<D1PreparedStatement> {
    db.prepare("SELECT count(*) AS n FROM dead_letters WHERE status = ?1")
        .bind(&[pending()])
}

/// A pending entry with the content hash of tombstone `id`: the one a
/// pending restore would duplicate.
pub fn pending_twin_of_tombstone(db: &D1Database, id: &str) -> Result<D1PreparedStatement> {
    db.prepare("SELECT id FROM dead_letters WHERE status = ?2 AND content_hash = (SELECT content_hash FROM dead_letter_tombstones WHERE id = ?1) ORDER BY created_at, id LIMIT 1")
        .bind(&[text(id), pending()])
}

/// Whether entry `id` is in D1 (a statement answering its id, or nothing).
pub fn exists_statement(db: &D1Database, id: &str) -> Result<D1PreparedStatement> {
    db.prepare("SELECT id FROM dead_letters WHERE id = ?1")
        .bind(&[text(id)])
}

/// Marks a pending entry seen again: a restore that joins it instead of
/// storing a second copy.
pub fn mark_seen_again(db: &D1Database, id: &str, now: i64) -> Result<D1PreparedStatement> {
    db.prepare("UPDATE dead_letters SET seen_count = seen_count + 1, last_seen_at = ?2 WHERE id = ?1 AND status = ?3")
        .bind(&[text(id), int(now), pending()])
}

/// How many pending entries match `filter`.
pub async fn count_pending(db: &D1Database, filter: &DeadLetterFilter) -> Result<i64> {
    #[derive(Deserialize)]
    struct N {
        n: i64,
    }
    let mut w = Where::default();
    filtered(&mut w, &pending_filter(filter));
    let sql = format!("SELECT count(*) AS n FROM dead_letters {}", w.clause());
    Ok(db
        .prepare(sql)
        .bind(&w.params)?
        .query()
        .await?
        .first::<N>()?
        .map_or(0, |r| r.n))
}

/// Writes an entry's status and replay count after a replay.
pub fn set_replay_result(
    db: &D1Database,
    id: &str,
    status: EntryStatus,
    replay_attempts: u32,
    now: i64,
) -> Result<D1PreparedStatement> {
    db.prepare("UPDATE dead_letters SET status = ?2, replay_attempts = ?3, replayed_at = CASE WHEN ?2 = ?5 THEN ?4 ELSE replayed_at END WHERE id = ?1")
        .bind(&[
            text(id),
            text(status.as_str()),
            int(i64::from(replay_attempts)),
            int(now),
            text(EntryStatus::Replayed.as_str()),
        ])
}

/// Closes a still-pending entry as replayed without sending it (its payload
/// was replayed under another entry in the same run).
pub fn close_as_deduped(db: &D1Database, id: &str, now: i64) -> Result<D1PreparedStatement> {
    db.prepare(
        "UPDATE dead_letters SET status = ?3, replayed_at = ?2 WHERE id = ?1 AND status = ?4",
    )
    .bind(&[
        text(id),
        int(now),
        text(EntryStatus::Replayed.as_str()),
        pending(),
    ])
}

/// Closes an entry still in `from` as replayed without sending it (a job's
/// entry whose identical payload this job already replayed; a job over
/// archived entries closes archived ones).
pub fn close_as_deduped_from(
    db: &D1Database,
    id: &str,
    from: EntryStatus,
    now: i64,
) -> Result<D1PreparedStatement> {
    db.prepare(
        "UPDATE dead_letters SET status = ?3, replayed_at = ?2 WHERE id = ?1 AND status = ?4",
    )
    .bind(&[
        text(id),
        int(now),
        text(EntryStatus::Replayed.as_str()),
        text(from.as_str()),
    ])
}

/// The stats statements over `dead_letters`, in the order the stats route
/// reads them: pending count and oldest, the dead letters that arrived in
/// the last hour as of `now` (`dead_letter_arrivals`), dominant pending
/// code, counts by status, pending counts by class.
pub fn stats_statements(db: &D1Database, now: i64) -> Result<Vec<D1PreparedStatement>> {
    Ok(vec![
        db.prepare("SELECT count(*) AS n, min(created_at) AS oldest FROM dead_letters WHERE status = ?1")
            .bind(&[pending()])?,
        db.prepare("SELECT 'ingress' AS k, coalesce(sum(n), 0) AS n FROM dead_letter_arrivals WHERE minute >= ?1")
            .bind(&[int(arrivals::first_bucket_of_window(now))])?,
        db.prepare("SELECT error_code AS k, count(*) AS n FROM dead_letters WHERE status = ?1 GROUP BY error_code ORDER BY n DESC, error_code LIMIT 1")
            .bind(&[pending()])?,
        db.prepare("SELECT status AS k, count(*) AS n FROM dead_letters GROUP BY status"),
        db.prepare("SELECT error_class AS k, count(*) AS n FROM dead_letters WHERE status = ?1 GROUP BY error_class")
            .bind(&[pending()])?,
    ])
}

/// Dead letters per hour since `since` (`k` = hour index,
/// `created_at / 3600000`), for the stats' hourly series, from
/// `dead_letters_by_time`.
pub fn per_hour(db: &D1Database, since: i64) -> Result<D1PreparedStatement> {
    db.prepare("SELECT created_at / 3600000 AS k, count(*) AS n FROM dead_letters WHERE created_at >= ?1 GROUP BY k")
        .bind(&[int(since)])
}

/// Moves an entry from `from` to `to`, only if it is still in `from` (a
/// concurrent decision wins cleanly: this one changes no row). With
/// `erase`, the same statement erases the stored payload: the original
/// event becomes null, the excerpt empty, and `input.erased` true, while
/// identity, failure evidence, the hash and the history stay.
pub fn set_status_if(
    db: &D1Database,
    id: &str,
    from: EntryStatus,
    to: EntryStatus,
    erase: bool,
) -> Result<D1PreparedStatement> {
    let sql = if erase {
        "UPDATE dead_letters SET status = ?3, envelope = json_set(envelope, '$.input.original', NULL, '$.input.excerpt', '', '$.input.excerpt_truncated', json('false'), '$.input.erased', json('true')) WHERE id = ?1 AND status = ?2"
    } else {
        "UPDATE dead_letters SET status = ?3 WHERE id = ?1 AND status = ?2"
    };
    db.prepare(sql)
        .bind(&[text(id), text(from.as_str()), text(to.as_str())])
}

/// Names `key`, the archive object that holds the events of `event_ids`,
/// on their entries, for each event whose row is gone: run in the
/// retention sweep's delete batch after the events delete, so exactly the
/// events it deleted are named (an event that stayed keeps none). The
/// story answers it once the event's row is swept (DESIGN §4).
pub fn name_event_archive(
    db: &D1Database,
    event_ids: &[&str],
    key: &str,
) -> Result<D1PreparedStatement> {
    db.prepare(
        "UPDATE dead_letters SET event_archive_key = ?2 WHERE event_id IN (SELECT value FROM json_each(?1)) \
         AND NOT EXISTS (SELECT 1 FROM events e WHERE e.event_id = dead_letters.event_id)",
    )
    .bind(&[text(&serde_json::to_string(event_ids)?), text(key)])
}

/// The archive key its entries name for a swept event (`key`), if any (a
/// statement for its story).
pub fn event_archive_key(db: &D1Database, event_id: &str) -> Result<D1PreparedStatement> {
    db.prepare(
        "SELECT event_archive_key AS key FROM dead_letters WHERE event_id = ?1 AND event_archive_key IS NOT NULL \
         ORDER BY created_at DESC, id DESC LIMIT 1",
    )
    .bind(&[text(event_id)])
}

/// The entries of one event, oldest first (a statement for its story).
pub fn for_event(db: &D1Database, event_id: &str) -> Result<D1PreparedStatement> {
    db.prepare(format!(
        "SELECT {SUMMARY_COLUMNS} FROM dead_letters WHERE event_id = ?1 ORDER BY created_at, id"
    ))
    .bind(&[text(event_id)])
}

/// Entries that failed the same way: one error signature.
#[derive(Debug, Clone, Serialize)]
pub struct Group {
    /// `sig_…`.
    pub signature: String,
    /// The root-cause code.
    pub code: String,
    /// The code's class.
    pub class: String,
    /// The sources its entries came from, sorted.
    pub sources: Vec<String>,
    /// The destinations its delivery entries failed at, sorted.
    pub destinations: Vec<String>,
    /// How many entries.
    pub count: i64,
    /// The oldest entry's dead-lettered time (unix ms).
    pub first_seen_at: i64,
    /// The latest time an entry of it was seen.
    pub last_seen_at: i64,
    /// The newest entry, to open as an example.
    pub sample_id: String,
    /// The sample's failure message.
    pub message: Option<String>,
}

#[derive(Deserialize)]
struct GroupRow {
    signature: String,
    code: String,
    class: String,
    sources: String,
    destinations: String,
    count: i64,
    first_seen_at: i64,
    last_seen_at: i64,
    sample_id: String,
    message: Option<String>,
}

/// Entries matching `filter`, dead-lettered within `range`, grouped by
/// error signature, largest first, at most `limit` groups. The sample is
/// each group's newest entry; its envelope is read for that one row only.
pub async fn groups(
    db: &D1Database,
    filter: &DeadLetterFilter,
    range: &TimeRange,
    limit: u32,
) -> Result<Vec<Group>> {
    let mut w = Where::default();
    filtered(&mut w, filter);
    within(&mut w, range);
    let clause = w.clause();
    let limit = w.bind(int(i64::from(limit)));
    let sql = format!(
        "WITH m AS (SELECT id, error_signature, error_code, error_class, source, destination, created_at, last_seen_at, envelope, \
           row_number() OVER (PARTITION BY error_signature ORDER BY created_at DESC, id DESC) AS rn FROM dead_letters {clause}) \
         SELECT error_signature AS signature, max(CASE WHEN rn = 1 THEN error_code END) AS code, max(CASE WHEN rn = 1 THEN error_class END) AS class, \
           json_group_array(DISTINCT source) FILTER (WHERE source IS NOT NULL) AS sources, \
           json_group_array(DISTINCT destination) FILTER (WHERE destination IS NOT NULL) AS destinations, count(*) AS count, \
           min(created_at) AS first_seen_at, max(last_seen_at) AS last_seen_at, max(CASE WHEN rn = 1 THEN id END) AS sample_id, \
           max(CASE WHEN rn = 1 THEN json_extract(envelope, '$.failure.message') END) AS message \
         FROM m GROUP BY error_signature ORDER BY count DESC, signature LIMIT {limit}"
    );
    let rows: Vec<GroupRow> = db.prepare(sql).bind(&w.params)?.query().await?.decode()?;
    Ok(rows.into_iter().map(group_of).collect())
}

fn group_of(r: GroupRow) -> Group {
    let sorted = |list: &str| {
        let mut names: Vec<String> = serde_json::from_str(list).unwrap_or_default();
        hookrelay_core::support::small_sort::sort_by(&mut names, |a, b| a.cmp(b));
        names
    };
    Group {
        signature: r.signature,
        code: r.code,
        class: r.class,
        sources: sorted(&r.sources),
        destinations: sorted(&r.destinations),
        count: r.count,
        first_seen_at: r.first_seen_at,
        last_seen_at: r.last_seen_at,
        sample_id: r.sample_id,
        message: r.message,
    }
}
