//! `alarms`: one row per alarm episode (`core::alarms::machine::AlarmRecord`),
//! keyed by `(id, since)`. The relay's watchdog reads and writes them; the
//! DLQ worker lists them at `GET /api/v1/admin/alerts`.

use super::{int, opt_text, text, Query, Row, Rows};
use hookrelay_core::alarms::machine::{AlarmRecord, Delivery};
use hookrelay_core::alarms::AlarmId;
use hookrelay_core::state::AlarmState;
use worker::{D1Database, D1PreparedStatement, Result};

const COLUMNS: &str =
    "id, since, state, resolved_at, detail, clear_runs, sent_state, attempts, last_attempt_at, last_error";

/// Every firing episode (at most one per alarm id, so as many as there
/// are destinations, sources and kinds): read whole, never behind a limit,
/// so a pile of resolved episodes can never hide one and make the watchdog
/// open it again.
pub fn firing(db: &D1Database) -> Result<D1PreparedStatement> {
    db.prepare(format!(
        "SELECT {COLUMNS} FROM alarms WHERE state = ?1 ORDER BY since, id"
    ))
    .bind(&[text(AlarmState::Firing.as_str())])
}

/// The oldest `limit` resolved episodes resolved at or after `cutoff`
/// whose `resolved` alert has not been acknowledged yet: those that may
/// still be owed (`core::alarms::machine::Owing`).
pub fn owed_resolved(db: &D1Database, cutoff: i64, limit: u32) -> Result<D1PreparedStatement> {
    // The states are written into the text (core's names, never input) so
    // SQLite can use the partial index `alarms_owed` (migration 0015).
    let resolved = AlarmState::Resolved.as_str();
    db.prepare(format!(
        "SELECT {COLUMNS} FROM alarms WHERE state = '{resolved}' AND sent_state IS NOT '{resolved}' \
         AND resolved_at >= ?1 ORDER BY since, id LIMIT ?2"
    ))
    .bind(&[int(cutoff), int(i64::from(limit))])
}

/// Firing episodes, and those resolved at or after `resolved_since`,
/// firing first then newest resolved first, at most `limit`.
pub async fn recent(db: &D1Database, resolved_since: i64, limit: u32) -> Result<Vec<AlarmRecord>> {
    let rows = db
        .prepare(format!(
            "SELECT {COLUMNS} FROM alarms WHERE state = ?1 OR resolved_at >= ?2 \
             ORDER BY state = ?1 DESC, coalesce(resolved_at, since) DESC, id LIMIT ?3"
        ))
        .bind(&[
            text(AlarmState::Firing.as_str()),
            int(resolved_since),
            int(i64::from(limit)),
        ])?
        .query()
        .await?;
    records(&rows)
}

/// Writes one episode (new or changed) at `now`.
pub fn upsert(db: &D1Database, r: &AlarmRecord, now: i64) -> Result<D1PreparedStatement> {
    let opt_int = |v: Option<i64>| v.map_or(wasm_bindgen::JsValue::NULL, int);
    db.prepare(
        "INSERT INTO alarms (id, since, kind, subject, state, resolved_at, detail, clear_runs, sent_state, attempts, last_attempt_at, last_error, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) \
         ON CONFLICT(id, since) DO UPDATE SET state = excluded.state, resolved_at = excluded.resolved_at, \
         detail = excluded.detail, clear_runs = excluded.clear_runs, sent_state = excluded.sent_state, \
         attempts = excluded.attempts, last_attempt_at = excluded.last_attempt_at, \
         last_error = excluded.last_error, updated_at = excluded.updated_at",
    )
    .bind(&[
        text(&r.id.to_string()),
        int(r.since),
        text(r.id.kind.as_str()),
        text(&r.id.subject),
        text(r.state.as_str()),
        opt_int(r.resolved_at),
        text(&r.detail.to_string()),
        int(i64::from(r.clear_runs)),
        opt_text(r.delivery.sent.map(AlarmState::as_str)),
        int(i64::from(r.delivery.attempts)),
        opt_int(r.delivery.last_attempt_at),
        opt_text(r.delivery.last_error.as_deref()),
        int(now),
    ])
}

/// The episodes of an answer to [`firing`], [`owed_resolved`] or [`recent`]. A row this
/// version cannot read (an unknown kind or state) is an error.
pub fn records(rows: &Rows) -> Result<Vec<AlarmRecord>> {
    rows.map(record)
}

fn record(r: &Row<'_>) -> Result<AlarmRecord> {
    let unknown = |e: hookrelay_core::state::UnknownState| worker::Error::RustError(e.to_string());
    let sent = match r.opt_text("sent_state")? {
        Some(s) => Some(AlarmState::parse(&s).map_err(unknown)?),
        None => None,
    };
    Ok(AlarmRecord {
        id: AlarmId::parse(&r.text("id")?).map_err(unknown)?,
        state: AlarmState::parse(&r.text("state")?).map_err(unknown)?,
        since: r.int("since")?,
        resolved_at: r.opt_int("resolved_at")?,
        detail: serde_json::from_str(&r.text("detail")?)?,
        clear_runs: u32::try_from(r.int("clear_runs")?).unwrap_or(u32::MAX),
        delivery: Delivery {
            sent,
            attempts: u32::try_from(r.int("attempts")?).unwrap_or(u32::MAX),
            last_attempt_at: r.opt_int("last_attempt_at")?,
            last_error: r.opt_text("last_error")?,
        },
    })
}

/// Stamps `sweep_state.watch_started_at` on the watchdog's first run and
/// answers it with the size figures (`watch_started_at`, `size_bytes`,
/// `size_swept_through`); its `meta.size_after` is the database size now.
pub fn watch_state(db: &D1Database, now: i64) -> Result<D1PreparedStatement> {
    db.prepare(
        "UPDATE sweep_state SET watch_started_at = coalesce(watch_started_at, ?1) WHERE id = 1 \
         RETURNING watch_started_at, size_bytes, size_swept_through",
    )
    .bind(&[int(now)])
}

/// The watch state: when watching started, the database size (D1's own
/// `size_after` when it answered one, else the sweep's last reading), and
/// the newest `ingested_at` the size rule swept.
pub fn read_watch_state(rows: &Rows, now: i64) -> Result<(i64, Option<u64>, Option<i64>)> {
    let row = rows.map_first(|r| {
        Ok((
            r.opt_int("watch_started_at")?.unwrap_or(now),
            r.opt_int("size_bytes")?.map(|n| n.max(0) as u64),
            r.opt_int("size_swept_through")?,
        ))
    })?;
    let (started, stored, swept) = row.ok_or_else(|| {
        worker::Error::RustError(
            "sweep_state has no row; apply migrations/0010_lifecycle.sql".into(),
        )
    })?;
    Ok((started, rows.size_after().or(stored), swept))
}
