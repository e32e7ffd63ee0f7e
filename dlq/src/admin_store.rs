//! D1 queries of the admin API. Filters are bound parameters, never
//! interpolated text; only fixed column names appear in the SQL.

use hookrelay_core::admin_query::{Cursor, DeadLetterFilter, EventFilter};
use hookrelay_platform::d1::{int, text};
use serde::{Deserialize, Serialize};
use wasm_bindgen::JsValue;
use worker::{D1Database, Result};

/// The listing columns of a dead-letter entry (not the envelope).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EntrySummary {
    pub id: String,
    pub kind: String,
    pub status: String,
    pub event_id: Option<String>,
    pub idempotency_key: Option<String>,
    pub source: Option<String>,
    pub error_code: String,
    pub error_class: String,
    pub error_signature: String,
    pub content_hash: String,
    pub attempts: i64,
    pub seen_count: i64,
    pub replay_attempts: i64,
    pub created_at: i64,
    pub last_seen_at: i64,
    pub replayed_at: Option<i64>,
}

const SUMMARY_COLUMNS: &str = "id, kind, status, event_id, idempotency_key, source, error_code, error_class, error_signature, content_hash, attempts, seen_count, replay_attempts, created_at, last_seen_at, replayed_at";

/// A whole entry: the summary plus the envelope JSON.
#[derive(Debug, Clone, Deserialize)]
pub struct EntryRow {
    #[serde(flatten)]
    pub summary: EntrySummary,
    pub envelope: String,
}

/// A WHERE clause built from optional filters, with numbered parameters.
#[derive(Default)]
struct Where {
    clauses: Vec<String>,
    params: Vec<JsValue>,
}

impl Where {
    fn bind(&mut self, value: JsValue) -> String {
        self.params.push(value);
        format!("?{}", self.params.len())
    }

    /// `column = value`, when a value is given.
    fn eq(&mut self, column: &str, value: Option<&str>) -> &mut Self {
        if let Some(v) = value {
            let p = self.bind(text(v));
            self.clauses.push(format!("{column} = {p}"));
        }
        self
    }

    /// A keyset position: `(time_col, id_col) <op> (at, id)`.
    fn after(&mut self, columns: &str, op: &str, at_ms: i64, id: JsValue) -> &mut Self {
        let at = self.bind(int(at_ms));
        let id = self.bind(id);
        self.clauses.push(format!("({columns}) {op} ({at}, {id})"));
        self
    }

    fn dead_letters(&mut self, filter: &DeadLetterFilter) -> &mut Self {
        self.eq("status", filter.status.as_deref())
            .eq("error_class", filter.class.as_deref())
            .eq("error_code", filter.code.as_deref())
            .eq("source", filter.source.as_deref())
    }

    /// The clause text and the parameter placeholder of `LIMIT limit + 1`
    /// (the extra row says whether there is a next page).
    fn finish(&mut self, limit: u32) -> (String, String) {
        let limit = self.bind(int(i64::from(limit) + 1));
        (self.clause(), limit)
    }

    /// The clause text alone.
    fn clause(&self) -> String {
        if self.clauses.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", self.clauses.join(" AND "))
        }
    }
}

/// Newest first, after `cursor`, at most `limit + 1` rows (the extra row
/// says whether there is a next page).
pub async fn list_entries(
    db: &D1Database,
    filter: &DeadLetterFilter,
    cursor: Option<&Cursor>,
    limit: u32,
) -> Result<Vec<EntrySummary>> {
    let mut w = Where::default();
    w.dead_letters(filter);
    if let Some(c) = cursor {
        w.after("created_at, id", "<", c.at_ms, text(&c.id));
    }
    let (clause, limit) = w.finish(limit);
    let sql = format!("SELECT {SUMMARY_COLUMNS} FROM dead_letters {clause} ORDER BY created_at DESC, id DESC LIMIT {limit}");
    db.prepare(sql).bind(&w.params)?.all().await?.results()
}

/// One entry with its envelope.
pub async fn get_entry(db: &D1Database, id: &str) -> Result<Option<EntryRow>> {
    db.prepare(format!(
        "SELECT {SUMMARY_COLUMNS}, content_hash, envelope FROM dead_letters WHERE id = ?1"
    ))
    .bind(&[text(id)])?
    .first::<EntryRow>(None)
    .await
}

/// A pending entry chosen for replay-all.
#[derive(Debug, Clone, Deserialize)]
pub struct CandidateRow {
    pub id: String,
    pub content_hash: String,
    pub created_at: i64,
}

/// Pending entries oldest first (the order they failed in), after `cursor`.
pub async fn replay_candidates(
    db: &D1Database,
    filter: &DeadLetterFilter,
    cursor: Option<&Cursor>,
    limit: u32,
) -> Result<Vec<CandidateRow>> {
    let mut w = Where::default();
    w.dead_letters(&DeadLetterFilter {
        status: Some("pending".into()),
        ..filter.clone()
    });
    if let Some(c) = cursor {
        w.after("created_at, id", ">", c.at_ms, text(&c.id));
    }
    let (clause, limit) = w.finish(limit);
    let sql = format!("SELECT id, content_hash, created_at FROM dead_letters {clause} ORDER BY created_at ASC, id ASC LIMIT {limit}");
    db.prepare(sql).bind(&w.params)?.all().await?.results()
}

/// How many pending entries match `filter`.
pub async fn count_pending(db: &D1Database, filter: &DeadLetterFilter) -> Result<i64> {
    #[derive(Deserialize)]
    struct N {
        n: i64,
    }
    let mut w = Where::default();
    w.dead_letters(&DeadLetterFilter {
        status: Some("pending".into()),
        ..filter.clone()
    });
    let sql = format!("SELECT count(*) AS n FROM dead_letters {}", w.clause());
    Ok(db
        .prepare(sql)
        .bind(&w.params)?
        .first::<N>(None)
        .await?
        .map_or(0, |r| r.n))
}

/// An ingested event, as `GET /events` shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EventSummary {
    pub event_id: String,
    pub idempotency_key: String,
    pub source: String,
    pub delivery_id: Option<String>,
    pub received_at: i64,
    pub ingested_at: i64,
    pub last_seen_at: i64,
    pub duplicate_count: i64,
    pub delivery_status: String,
    pub delivery_attempts: i64,
    pub delivered_at: Option<i64>,
    pub last_delivery_error: Option<String>,
}

/// Ingested events, newest first.
pub async fn list_events(
    db: &D1Database,
    filter: &EventFilter,
    cursor: Option<&Cursor>,
    limit: u32,
) -> Result<Vec<EventSummary>> {
    let mut w = Where::default();
    w.eq("source", filter.source.as_deref())
        .eq("idempotency_key", filter.key.as_deref());
    if let Some(since) = filter.since_ms {
        let p = w.bind(int(since));
        w.clauses.push(format!("ingested_at >= {p}"));
    }
    if let Some(c) = cursor {
        w.after("ingested_at, event_id", "<", c.at_ms, text(&c.id));
    }
    let (clause, limit) = w.finish(limit);
    let sql = format!(
        "SELECT event_id, idempotency_key, source, delivery_id, received_at, ingested_at, last_seen_at, duplicate_count, delivery_status, delivery_attempts, delivered_at, last_delivery_error \
         FROM events {clause} ORDER BY ingested_at DESC, event_id DESC LIMIT {limit}"
    );
    db.prepare(sql).bind(&w.params)?.all().await?.results()
}

/// One audit record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AuditRow {
    pub id: i64,
    pub entry_id: String,
    pub event_id: Option<String>,
    pub actor: String,
    pub reason: String,
    pub outcome: String,
    pub error_code: Option<String>,
    pub error_message: Option<String>,
    pub run_id: Option<String>,
    pub at: i64,
}

/// Audit records newest first, optionally for one entry. The cursor's id is
/// the record id as text.
pub async fn list_audit(
    db: &D1Database,
    entry_id: Option<&str>,
    cursor: Option<&Cursor>,
    limit: u32,
) -> Result<Vec<AuditRow>> {
    let mut w = Where::default();
    w.eq("entry_id", entry_id);
    if let Some(c) = cursor {
        w.after(
            "at, id",
            "<",
            c.at_ms,
            int(c.id.parse::<i64>().unwrap_or(i64::MAX)),
        );
    }
    let (clause, limit) = w.finish(limit);
    let sql = format!(
        "SELECT id, entry_id, event_id, actor, reason, outcome, error_code, error_message, run_id, at FROM replay_audit {clause} ORDER BY at DESC, id DESC LIMIT {limit}"
    );
    db.prepare(sql).bind(&w.params)?.all().await?.results()
}
