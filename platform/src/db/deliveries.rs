//! `deliveries`: one row per (event, destination), with its own state,
//! lease, attempts and parking (migration 0017). Every statement that
//! changes a row here is batched with [`summary_statement`], which
//! recomputes the event's one `delivery_status` from its rows
//! (`hookrelay_core::deliver::deliveries::summary::SUMMARY_SQL`).

use super::events::ParkedRow;
use super::{int, opt_text, text};
use crate::db::{Query, Rows};
use hookrelay_core::deliver::deliveries::legacy::LEGACY_STATE_SQL;
use hookrelay_core::deliver::deliveries::summary::SUMMARY_SQL;
use hookrelay_core::state::error_code::{ErrorCode, Failure};
use hookrelay_core::state::DeliveryState;
use worker::{D1Database, D1PreparedStatement, Result};

/// One delivery's key: (event id, destination name).
pub type Key<'a> = (&'a str, &'a str);

fn keys_json(keys: &[Key<'_>]) -> Result<String> {
    Ok(serde_json::to_string(keys)?)
}

/// The pending deliveries of the events this batch ingested fresh (their
/// row carries the batch's `nonce`): `rows` are (event id, destination).
/// A redelivered or duplicate message inserts nothing: the routes were
/// evaluated once, when the event was first ingested.
pub fn insert_routed(
    db: &D1Database,
    rows: &[Key<'_>],
    nonce: &str,
    now_ms: i64,
) -> Result<D1PreparedStatement> {
    db.prepare(
        "INSERT OR IGNORE INTO deliveries (event_id, destination, state, attempts, created_at, updated_at) \
         SELECT value ->> 0, value ->> 1, ?4, 0, ?2, ?2 FROM json_each(?1) j \
         WHERE EXISTS (SELECT 1 FROM events e WHERE e.event_id = j.value ->> 0 AND e.ingest_nonce = ?3)",
    )
    .bind(&[
        text(&keys_json(rows)?),
        int(now_ms),
        text(nonce),
        text(DeliveryState::Pending.as_str()),
    ])
}

/// Copies the events of `event_ids` ingested before deliveries existed
/// (`routed_at` NULL) into their one row, named after their source
/// (`hookrelay_core::deliver::deliveries::legacy`), starts a drain for
/// each destination a parked one was copied to
/// (`drains::start_for_legacy_parked`), then marks them routed: three
/// statements, for the batch of whatever touches such an event first (the
/// backfill, a redelivered ingest message, a replay). Every copy path runs
/// these, so a parked copy always has its drain; the caller reads the
/// drains started with [`legacy_drains_started`] and sends their first
/// steps (`crate::parking::park::start_drains`).
pub fn copy_legacy(
    db: &D1Database,
    event_ids: &[&str],
    now_ms: i64,
) -> Result<[D1PreparedStatement; 3]> {
    let ids = serde_json::to_string(event_ids)?;
    let copy = format!(
        "INSERT OR IGNORE INTO deliveries (event_id, destination, state, attempts, created_at, updated_at, claimed_at, delivered_at, parked_at, park_cause, last_error) \
         SELECT e.event_id, e.source, {LEGACY_STATE_SQL}, e.delivery_attempts, e.ingested_at, ?2, e.delivery_claimed_at, e.delivered_at, e.parked_at, \
         CASE WHEN e.delivery_status = 'parked' THEN 'breaker' END, e.last_delivery_error \
         FROM events e WHERE e.event_id IN (SELECT value FROM json_each(?1)) AND e.routed_at IS NULL AND e.delivery_status <> 'none'"
    );
    let copy = db.prepare(copy).bind(&[text(&ids), int(now_ms)])?;
    let drains = super::drains::start_for_legacy_parked(db, &ids, now_ms)?;
    let mark = db
        .prepare("UPDATE events SET routed_at = ingested_at WHERE event_id IN (SELECT value FROM json_each(?1)) AND routed_at IS NULL")
        .bind(&[text(&ids)])?;
    Ok([copy, drains, mark])
}

/// The drains [`copy_legacy`] started (destination, generation), from the
/// results of a batch whose statements at `copy_at` are the copy's.
pub fn legacy_drains_started(results: &[Rows], copy_at: usize) -> Result<Vec<(String, i64)>> {
    match results.get(copy_at + 1) {
        Some(r) => super::drains::read_started(r),
        None => Err(worker::Error::RustError(
            "D1 answered no result for the legacy copy's drains; their rows are written and the resume check sends their first steps".into(),
        )),
    }
}

/// Up to `limit` events parked before deliveries existed (`routed_at`
/// NULL), by the partial index `events_parked`: (event id, source).
pub async fn legacy_parked(db: &D1Database, limit: u32) -> Result<Vec<(String, String)>> {
    db.prepare("SELECT event_id, source FROM events WHERE delivery_status = 'parked' AND routed_at IS NULL LIMIT ?1")
        .bind(&[int(i64::from(limit))])?
        .query()
        .await?
        .map(|r| Ok((r.text("event_id")?, r.text("source")?)))
}

/// The deliveries of `event_ids` still to make (read with [`read_keys`]):
/// pending, or leased by an isolate that died (its lease older than
/// `stale_before_ms`), so a redelivered ingest message never leaves one
/// stuck.
pub fn pending_of(
    db: &D1Database,
    event_ids: &[&str],
    stale_before_ms: i64,
) -> Result<D1PreparedStatement> {
    db.prepare("SELECT event_id, destination FROM deliveries WHERE event_id IN (SELECT value FROM json_each(?1)) AND (state = ?2 OR (state = ?3 AND claimed_at < ?4))")
        .bind(&[
            text(&serde_json::to_string(event_ids)?),
            text(DeliveryState::Pending.as_str()),
            text(DeliveryState::Delivering.as_str()),
            int(stale_before_ms),
        ])
}

/// (event id, destination) pairs of a statement that answers them.
pub fn read_keys(result: &Rows) -> Result<Vec<(String, String)>> {
    result.map(|r| Ok((r.text("event_id")?, r.text("destination")?)))
}

fn states_json(states: &[DeliveryState]) -> Result<String> {
    let names: Vec<&str> = states.iter().map(|s| s.as_str()).collect();
    Ok(serde_json::to_string(&names)?)
}

/// Takes the lease of every delivery of `keys` in one of `claimable`
/// (`DeliveryState::claimable`), or whose lease went stale before
/// `stale_before_ms`; answers the leased keys ([`read_keys`]).
pub fn claim_statement(
    db: &D1Database,
    keys: &[Key<'_>],
    claimable: &[DeliveryState],
    now_ms: i64,
    stale_before_ms: i64,
) -> Result<D1PreparedStatement> {
    db.prepare(
        "UPDATE deliveries SET state = ?4, claimed_at = ?2, updated_at = ?2 \
         WHERE (event_id, destination) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?1)) \
         AND (state IN (SELECT value FROM json_each(?5)) OR (state = ?4 AND claimed_at < ?3)) \
         RETURNING event_id, destination",
    )
    .bind(&[
        text(&keys_json(keys)?),
        int(now_ms),
        int(stale_before_ms),
        text(DeliveryState::Delivering.as_str()),
        text(&states_json(claimable)?),
    ])
}

/// The columns a delivery is read with: its event's, as a [`ParkedRow`],
/// then its own.
const DELIVERY_COLUMNS: &str = "e.event_id, e.idempotency_key, e.source, e.delivery_id, e.received_at, e.headers, e.body, e.body_ref, e.body_bytes, e.queue_message_id, \
     COALESCE(d.parked_at, 0) AS parked_at, d.last_error AS last_delivery_error, d.attempts AS delivery_attempts, d.destination, d.state";

/// A delivery with its event, as read back.
#[derive(Debug, Clone)]
pub struct DeliveryRow {
    /// The event (and the delivery's parking, attempts and last error).
    pub event: ParkedRow,
    /// The destination's name.
    pub destination: String,
    /// The state as read.
    pub state: Option<DeliveryState>,
}

fn delivery_rows(result: &Rows) -> Result<Vec<DeliveryRow>> {
    result.map(|r| {
        Ok(DeliveryRow {
            event: ParkedRow::from_row(r)?,
            destination: r.text("destination")?,
            state: DeliveryState::parse(&r.text("state")?).ok(),
        })
    })
}

/// The deliveries of `keys` with their events, as they stand (run after
/// a claim in the same batch: a leased one reads `delivering`).
pub fn read_statement(db: &D1Database, keys: &[Key<'_>]) -> Result<D1PreparedStatement> {
    let sql = format!(
        "SELECT {DELIVERY_COLUMNS} FROM deliveries d JOIN events e ON e.event_id = d.event_id \
         WHERE (d.event_id, d.destination) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?1))"
    );
    db.prepare(sql).bind(&[text(&keys_json(keys)?)])
}

/// Reads a [`read_statement`]'s rows.
pub fn read_rows(result: &Rows) -> Result<Vec<DeliveryRow>> {
    delivery_rows(result)
}

/// An event's `delivery_status` recomputed from its deliveries, plus the
/// event-level figures the listing shows (calls made, the last success,
/// the last error, when it was first parked), in the batch that changed
/// them.
pub fn summary_statement(
    db: &D1Database,
    event_id: &str,
    calls: i64,
    delivered_at: Option<i64>,
    last_error: Option<ErrorCode>,
) -> Result<D1PreparedStatement> {
    let sql = format!(
        "UPDATE events SET delivery_status = ({SUMMARY_SQL}), delivery_attempts = delivery_attempts + ?2, \
         delivered_at = COALESCE(?3, delivered_at), last_delivery_error = COALESCE(?4, last_delivery_error), delivery_claimed_at = NULL, \
         parked_at = COALESCE(parked_at, (SELECT min(parked_at) FROM deliveries WHERE event_id = ?1)) \
         WHERE event_id = ?1 AND EXISTS (SELECT 1 FROM deliveries WHERE event_id = ?1)"
    );
    db.prepare(sql).bind(&[
        text(event_id),
        int(calls),
        delivered_at.map_or(wasm_bindgen::JsValue::NULL, int),
        opt_text(last_error.map(ErrorCode::as_str)),
    ])
}

/// A leased delivery's call result: `delivered`, or `after` (the state
/// a failure leaves, `DeliveryState::after_failure`) with its code; the
/// lease is released.
pub fn outcome_statement(
    db: &D1Database,
    (event_id, destination): Key<'_>,
    failure: Option<&Failure>,
    after: DeliveryState,
    now_ms: i64,
) -> Result<D1PreparedStatement> {
    let state = match failure {
        None => DeliveryState::Delivered,
        Some(_) => after,
    };
    db.prepare(
        "UPDATE deliveries SET state = ?3, attempts = attempts + 1, updated_at = ?4, claimed_at = NULL, \
         delivered_at = CASE WHEN ?3 = 'delivered' THEN ?4 ELSE delivered_at END, \
         last_error = CASE WHEN ?3 = 'delivered' THEN NULL ELSE COALESCE(?5, last_error) END \
         WHERE event_id = ?1 AND destination = ?2 AND state = ?6",
    )
    .bind(&[
        text(event_id),
        text(destination),
        text(state.as_str()),
        int(now_ms),
        opt_text(failure.map(|f| f.code.as_str())),
        text(DeliveryState::Delivering.as_str()),
    ])
}

/// Parks a leased delivery (no call was made): `parked_at` keeps the first
/// time, a root cause already known is kept, else `cause` stands in.
pub fn park_statement(
    db: &D1Database,
    (event_id, destination): Key<'_>,
    cause: Option<ErrorCode>,
    park_cause: &str,
    now_ms: i64,
) -> Result<D1PreparedStatement> {
    db.prepare(
        "UPDATE deliveries SET state = ?3, parked_at = COALESCE(parked_at, ?4), park_cause = ?6, updated_at = ?4, claimed_at = NULL, \
         last_error = COALESCE(last_error, ?5) WHERE event_id = ?1 AND destination = ?2 AND state = ?7",
    )
    .bind(&[
        text(event_id),
        text(destination),
        text(DeliveryState::Parked.as_str()),
        int(now_ms),
        opt_text(cause.map(ErrorCode::as_str)),
        text(park_cause),
        text(DeliveryState::Delivering.as_str()),
    ])
}

/// Marks deliveries whose hand-off to `webhooks-dlq` was sent
/// `dead_lettered`, from any state but `delivered`.
pub fn dead_lettered_statement(
    db: &D1Database,
    keys: &[Key<'_>],
    now_ms: i64,
) -> Result<D1PreparedStatement> {
    db.prepare(
        "UPDATE deliveries SET state = ?3, updated_at = ?2, claimed_at = NULL \
         WHERE (event_id, destination) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?1)) AND state <> ?4",
    )
    .bind(&[
        text(&keys_json(keys)?),
        int(now_ms),
        text(DeliveryState::DeadLettered.as_str()),
        text(DeliveryState::Delivered.as_str()),
    ])
}

/// Marks `keys` dead-lettered and recomputes their events' summaries, in
/// one round trip.
pub async fn mark_dead_lettered(db: &D1Database, keys: &[Key<'_>], now_ms: i64) -> Result<()> {
    if keys.is_empty() {
        return Ok(());
    }
    let mut stmts = vec![dead_lettered_statement(db, keys, now_ms)?];
    let mut seen: Vec<&str> = Vec::new();
    for (event_id, _) in keys {
        if !seen.contains(event_id) {
            seen.push(event_id);
            stmts.push(summary_statement(db, event_id, 0, None, None)?);
        }
    }
    crate::db::batch(db, stmts).await?;
    Ok(())
}

/// The oldest deliveries parked for `destination` (by `parked_at`, then
/// arrival), at most `limit`; one a crashed drain step left leased before
/// `stale_before_ms` counts as parked again. Served by `deliveries_parked`.
pub async fn oldest_parked(
    db: &D1Database,
    destination: &str,
    stale_before_ms: i64,
    limit: u32,
) -> Result<Vec<DeliveryRow>> {
    let sql = format!(
        "SELECT {DELIVERY_COLUMNS} FROM deliveries d JOIN events e ON e.event_id = d.event_id \
         WHERE d.destination = ?1 AND (d.state = ?2 OR (d.state = ?3 AND d.claimed_at < ?4 AND d.parked_at IS NOT NULL)) \
         ORDER BY d.parked_at, e.ingested_at, e.rowid LIMIT ?5"
    );
    db.prepare(sql)
        .bind(&[
            text(destination),
            text(DeliveryState::Parked.as_str()),
            text(DeliveryState::Delivering.as_str()),
            int(stale_before_ms),
            int(i64::from(limit)),
        ])?
        .query()
        .await
        .and_then(|r| delivery_rows(&r))
}

/// Deliveries parked for `destination` since before `parked_before_ms`
/// (over the age limit), oldest first, at most `limit`.
pub async fn over_age(
    db: &D1Database,
    destination: &str,
    parked_before_ms: i64,
    limit: u32,
) -> Result<Vec<DeliveryRow>> {
    let sql = format!(
        "SELECT {DELIVERY_COLUMNS} FROM deliveries d JOIN events e ON e.event_id = d.event_id \
         WHERE d.destination = ?1 AND d.state = ?2 AND d.parked_at < ?3 ORDER BY d.parked_at, e.ingested_at, e.rowid LIMIT ?4"
    );
    db.prepare(sql)
        .bind(&[
            text(destination),
            text(DeliveryState::Parked.as_str()),
            int(parked_before_ms),
            int(i64::from(limit)),
        ])?
        .query()
        .await
        .and_then(|r| delivery_rows(&r))
}

/// Takes the lease of one parked delivery for a drain step (or of one a
/// crashed step left leased); whether it did.
pub async fn claim_parked(
    db: &D1Database,
    key: Key<'_>,
    now_ms: i64,
    stale_before_ms: i64,
) -> Result<bool> {
    let stmt = claim_statement(
        db,
        &[key],
        DeliveryState::claimable(hookrelay_core::parking::Caller::DrainStep),
        now_ms,
        stale_before_ms,
    )?;
    Ok(!read_keys(&stmt.query().await?)?.is_empty())
}

/// Puts a leased delivery back to `parked` (its destination failed again,
/// or the step stopped before calling it), counting the call when one was
/// made.
pub async fn repark(
    db: &D1Database,
    (event_id, destination): Key<'_>,
    failure: Option<&Failure>,
    now_ms: i64,
) -> Result<()> {
    let stmt = db
        .prepare(
            "UPDATE deliveries SET state = ?3, claimed_at = NULL, updated_at = ?6, attempts = attempts + ?4, \
             last_error = COALESCE(?5, last_error) WHERE event_id = ?1 AND destination = ?2 AND state = ?7",
        )
        .bind(&[
            text(event_id),
            text(destination),
            text(DeliveryState::Parked.as_str()),
            int(i64::from(failure.is_some())),
            opt_text(failure.map(|f| f.code.as_str())),
            int(now_ms),
            text(DeliveryState::Delivering.as_str()),
        ])?;
    let summary = summary_statement(
        db,
        event_id,
        i64::from(failure.is_some()),
        None,
        failure.map(|f| f.code),
    )?;
    crate::db::batch(db, vec![stmt, summary]).await?;
    Ok(())
}
