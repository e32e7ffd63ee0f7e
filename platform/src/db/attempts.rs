//! `attempts`: every failed consumer attempt. Cloudflare's DLQ carries no
//! reason, so the DLQ worker builds its envelope from these rows.

use super::{int, opt_text, text};
use crate::db::Rows;
use hookrelay_core::retry::attempt::AttemptRecord;
use hookrelay_core::state::error_code::{ErrorCode, Failure, FailureClass};
use serde::{Deserialize, Serialize};
use worker::{D1Database, D1PreparedStatement, Result};

/// One failed attempt, as recorded.
pub struct FailedAttempt<'a> {
    /// The event id, when the message names one.
    pub event_id: Option<&'a str>,
    /// The queue message id.
    pub queue_message_id: &'a str,
    /// The platform attempt number.
    pub attempt: u32,
    /// What failed.
    pub failure: &'a Failure,
    /// The destination called, for a delivery's attempt (`None`: ingest).
    pub destination: Option<&'a str>,
}

/// The insert of one failed attempt, for a caller that batches it.
pub fn insert_statement(
    db: &D1Database,
    a: &FailedAttempt<'_>,
    now_ms: i64,
) -> Result<D1PreparedStatement> {
    db.prepare("INSERT INTO attempts (event_id, queue_message_id, attempt, class, code, message, at, cause, destination) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)")
        .bind(&[
            opt_text(a.event_id),
            text(a.queue_message_id),
            int(i64::from(a.attempt)),
            text(a.failure.class().as_str()),
            text(a.failure.code.as_str()),
            text(&a.failure.message),
            int(now_ms),
            opt_text(a.failure.cause.map(|c| c.as_str())),
            opt_text(a.destination),
        ])
}

/// Records failed attempts in one round trip.
pub async fn record(db: &D1Database, attempts: &[FailedAttempt<'_>], now_ms: i64) -> Result<()> {
    if attempts.is_empty() {
        return Ok(());
    }
    let statements = attempts
        .iter()
        .map(|a| insert_statement(db, a, now_ms))
        .collect::<Result<Vec<_>>>()?;
    crate::db::batch(db, statements).await?;
    Ok(())
}

#[derive(Deserialize)]
struct AttemptRow {
    attempt: f64,
    class: String,
    code: String,
    message: String,
    at: f64,
    cause: Option<String>,
}

/// One attempt as a JSON object, for `json_group_array`.
const ATTEMPT_JSON: &str = "json_object('attempt', attempt, 'class', class, 'code', code, 'message', message, 'at', at, 'cause', cause)";

/// The failed attempts of a whole DLQ batch in one statement; read it with
/// [`histories_of`]. An ingest's are those recorded under its queue message
/// id (one of `ids`) with no destination; a delivery's, those of its event
/// to its destination (one of `keys`, over `attempts_by_event_destination`),
/// keyed by [`delivery_history_key`]. Each history comes back as one JSON
/// array (one row per message, not per attempt: far fewer values to move
/// into wasm); the envelope orders them.
pub fn histories_statement(
    db: &D1Database,
    ids: &[&str],
    keys: &[(&str, &str)],
) -> Result<D1PreparedStatement> {
    db.prepare(format!("SELECT queue_message_id, json_group_array({ATTEMPT_JSON}) AS history \
                FROM attempts WHERE queue_message_id IN (SELECT value FROM json_each(?1)) AND destination IS NULL GROUP BY queue_message_id \
                UNION ALL \
                SELECT a.event_id || char(10) || a.destination, json_group_array({ATTEMPT_JSON}) \
                FROM json_each(?2) k JOIN attempts a ON a.event_id = k.value->>0 AND a.destination = k.value->>1 GROUP BY a.event_id, a.destination"))
        .bind(&[text(&serde_json::to_string(ids)?), text(&serde_json::to_string(keys)?)])
}

/// How [`histories_statement`] names a delivery's history.
pub fn delivery_history_key(event_id: &str, destination: &str) -> String {
    format!("{event_id}\n{destination}")
}

#[derive(Deserialize)]
struct HistoryRow {
    queue_message_id: String,
    history: String,
}

/// Each queue message's failed attempts, as (queue message id, attempts).
/// A class or code this version does not know reads as `UNKNOWN`: the
/// history is evidence, and an unreadable label must not lose the rest.
pub fn histories_of(result: &Rows) -> Result<Vec<(String, Vec<AttemptRecord>)>> {
    let mut out = Vec::new();
    for row in result.decode::<HistoryRow>()? {
        let attempts: Vec<AttemptRow> = serde_json::from_str(&row.history)?;
        let records = attempts
            .into_iter()
            .map(|a| AttemptRecord {
                attempt: a.attempt as u32,
                class: FailureClass::parse(&a.class).unwrap_or(FailureClass::Unknown),
                code: ErrorCode::parse(&a.code).unwrap_or(ErrorCode::Unknown),
                message: a.message,
                at_ms: a.at as i64,
                cause: a.cause.as_deref().and_then(ErrorCode::parse),
            })
            .collect();
        out.push((row.queue_message_id, records));
    }
    Ok(out)
}

/// One failed consumer attempt, as an event's story shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EventAttempt {
    /// The queue message it was on.
    pub queue_message_id: String,
    /// The platform attempt number.
    pub attempt: i64,
    /// The failure class.
    pub class: String,
    /// The stable error code.
    pub code: String,
    /// What failed.
    pub message: String,
    /// When (unix ms).
    pub at: i64,
    /// For `CIRCUIT_OPEN`: the failure that opened the breaker.
    pub cause: Option<String>,
    /// The destination called; null for an ingest attempt (and for every
    /// attempt from before deliveries existed).
    pub destination: Option<String>,
}

/// Every failed attempt of one event, oldest first, across all the queue
/// messages that carried it (a statement for the story batch).
pub fn for_event(db: &D1Database, event_id: &str) -> Result<D1PreparedStatement> {
    db.prepare("SELECT queue_message_id, attempt, class, code, message, at, cause, destination FROM attempts WHERE event_id = ?1 ORDER BY at, id")
        .bind(&[text(event_id)])
}
