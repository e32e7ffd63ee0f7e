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
use hookrelay_core::deliver::lease::{lease_end, lease_end_sql};
use hookrelay_core::retry::delivery_attempts::ATTEMPT_BUDGET;
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
/// Their `due_at` is 0: no message is outstanding yet, so [`to_send`] in
/// the same batch takes them; a pull destination's (of `pulls`) is due
/// now instead, to be pulled, and [`to_send`] never takes it.
/// A redelivered or duplicate message inserts nothing: the routes were
/// evaluated once, when the event was first ingested.
pub fn insert_routed(
    db: &D1Database,
    rows: &[Key<'_>],
    (nonce, pulls): (&str, &[String]),
    now_ms: i64,
) -> Result<D1PreparedStatement> {
    db.prepare(
        "INSERT OR IGNORE INTO deliveries (event_id, destination, state, attempts, created_at, updated_at, due_at) \
         SELECT value ->> 0, value ->> 1, ?4, 0, ?2, ?2, CASE WHEN value ->> 1 IN (SELECT value FROM json_each(?5)) THEN ?2 ELSE 0 END \
         FROM json_each(?1) j \
         WHERE EXISTS (SELECT 1 FROM events e WHERE e.event_id = j.value ->> 0 AND e.ingest_nonce = ?3)",
    )
    .bind(&[
        text(&keys_json(rows)?),
        int(now_ms),
        text(nonce),
        text(DeliveryState::Pending.as_str()),
        text(&serde_json::to_string(pulls)?),
    ])
}

/// Copies the events of `event_ids` ingested before deliveries existed
/// (`routed_at` NULL) into their one row (with no message outstanding:
/// `due_at` 0, so a pending one is sent at once), named after their source
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
        "INSERT OR IGNORE INTO deliveries (event_id, destination, state, attempts, created_at, updated_at, claimed_at, delivered_at, parked_at, park_cause, last_error, due_at) \
         SELECT e.event_id, e.source, {LEGACY_STATE_SQL}, e.delivery_attempts, e.ingested_at, ?2, e.delivery_claimed_at, e.delivered_at, e.parked_at, \
         CASE WHEN e.delivery_status = 'parked' THEN 'breaker' END, e.last_delivery_error, 0 \
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

/// The deliveries of `event_ids` whose message is to be sent now, marked
/// outstanding from `now_ms` (read with [`read_keys`]): pending, not handed
/// to the DLQ, and with no message outstanding (`due_at` before
/// `overdue_before_ms`, `hookrelay_core::deliver::overdue`; 0 for one just
/// routed). A leased one is its holder's, and a lease that ran out is the
/// periodic check's ([`expired_leases`]), so a redelivered or duplicated
/// `webhooks` message never re-sends a delivery that has a message on its
/// way, or one waiting out its backoff with a fresh budget. A pull
/// destination's (of `pulls`) never has a message: it waits to be pulled.
pub fn to_send(
    db: &D1Database,
    event_ids: &[&str],
    now_ms: i64,
    (overdue_before_ms, pulls): (i64, &[String]),
) -> Result<D1PreparedStatement> {
    db.prepare(format!(
        "UPDATE deliveries SET due_at = ?3 WHERE event_id IN (SELECT value FROM json_each(?1)) AND {OVERDUE} \
         RETURNING event_id, destination"
    ))
    .bind(&[
        text(&serde_json::to_string(event_ids)?),
        int(overdue_before_ms),
        int(now_ms),
        text(DeliveryState::Pending.as_str()),
        text(&serde_json::to_string(pulls)?),
    ])
}

/// A pending delivery whose message is overdue (`?2`: the `due_at` before
/// which it is; `?4`: `pending`; `?5`: the pull destinations, as a JSON
/// list, whose deliveries have no message). A row of the previous release
/// has no `due_at` and counts from its last change.
const OVERDUE: &str = "state = ?4 AND handed_off_at IS NULL AND COALESCE(due_at, updated_at) < ?2 \
     AND destination NOT IN (SELECT value FROM json_each(?5))";

/// The rows of `alias` in `state` (`pending` or `delivering`), spelt so
/// that SQLite reads them through the partial index `deliveries_open`
/// (0024): its condition word for word, then the state, both literals. A
/// state bound as a parameter, or the state alone, makes SQLite scan every
/// row a destination ever had (`EXPLAIN QUERY PLAN`: `SCAN d`), and the
/// periodic check runs its reads every minute.
fn open_rows(alias: &str, state: DeliveryState) -> String {
    format!(
        "{alias}.state IN ('{}', '{}') AND {alias}.state = '{}'",
        DeliveryState::Pending.as_str(),
        DeliveryState::Delivering.as_str(),
        state.as_str()
    )
}

/// Marks `keys` as having no message outstanding (their send failed), so
/// the next redelivery of their `webhooks` message, or the periodic check,
/// sends them at once.
pub async fn unsent(db: &D1Database, keys: &[Key<'_>]) -> Result<()> {
    if keys.is_empty() {
        return Ok(());
    }
    db.prepare(
        "UPDATE deliveries SET due_at = 0 WHERE (event_id, destination) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?1)) AND state = ?2",
    )
    .bind(&[text(&keys_json(keys)?), text(DeliveryState::Pending.as_str())])?
    .run()
    .await?;
    Ok(())
}

/// (event id, destination) pairs of a statement that answers them.
pub fn read_keys(result: &Rows) -> Result<Vec<(String, String)>> {
    result.map(|r| Ok((r.text("event_id")?, r.text("destination")?)))
}

fn states_json(states: &[DeliveryState]) -> Result<String> {
    let names: Vec<&str> = states.iter().map(|s| s.as_str()).collect();
    Ok(serde_json::to_string(&names)?)
}

/// A lease to take: when (`claimed_at`, which also names the lease in
/// every later write of its holder) and until when
/// (`hookrelay_core::deliver::lease::lease_until`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    /// When it was taken.
    pub at: i64,
    /// Its stamp on the row (`hookrelay_core::deliver::lease::claim_stamp`):
    /// the lease's identity in every later write of its holder.
    pub claimed_at: i64,
    /// Its end.
    pub until: i64,
}

impl Lease {
    /// A lease taken at `at_ms` until `until_ms`.
    pub fn new(at_ms: i64, until_ms: i64) -> Lease {
        Lease {
            at: at_ms,
            claimed_at: hookrelay_core::deliver::lease::claim_stamp(at_ms, until_ms),
            until: until_ms,
        }
    }
}

/// Takes the lease of every delivery of `keys` in one of `claimable`
/// (`DeliveryState::claimable`), never one another holder leases (a lease
/// that ran out is the periodic check's to settle, counted). With `due_by`
/// (a consumer's message) only a delivery whose message is due by then and
/// that is not handed to the DLQ: an extra copy of a message calls nothing
/// before its delay. Answers the leased keys ([`read_keys`]).
pub fn claim_statement(
    db: &D1Database,
    keys: &[Key<'_>],
    claimable: &[DeliveryState],
    lease: Lease,
    due_by: Option<i64>,
) -> Result<D1PreparedStatement> {
    db.prepare(
        "UPDATE deliveries SET state = ?4, claimed_at = ?2, lease_until = ?3, updated_at = ?7 \
         WHERE (event_id, destination) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?1)) \
         AND state IN (SELECT value FROM json_each(?5)) \
         AND (?6 IS NULL OR (handed_off_at IS NULL AND (due_at IS NULL OR due_at <= ?6))) \
         RETURNING event_id, destination",
    )
    .bind(&[
        text(&keys_json(keys)?),
        int(lease.claimed_at),
        int(lease.until),
        text(DeliveryState::Delivering.as_str()),
        text(&states_json(claimable)?),
        due_by.map_or(wasm_bindgen::JsValue::NULL, int),
        int(lease.at),
    ])
}

/// The columns a delivery is read with: its event's, as a [`ParkedRow`],
/// then its own.
const DELIVERY_COLUMNS: &str = "e.event_id, e.idempotency_key, e.source, e.delivery_id, e.received_at, e.headers, e.body, e.body_ref, e.body_bytes, e.queue_message_id, \
     COALESCE(d.parked_at, 0) AS parked_at, d.last_error AS last_delivery_error, d.attempts AS delivery_attempts, d.destination, d.state, \
     d.claimed_at, d.lease_until";

/// A delivery with its event, as read back.
#[derive(Debug, Clone)]
pub struct DeliveryRow {
    /// The event (and the delivery's parking, attempts and last error).
    pub event: ParkedRow,
    /// The destination's name.
    pub destination: String,
    /// The state as read.
    pub state: Option<DeliveryState>,
    /// When its lease ends, if it holds one
    /// (`hookrelay_core::deliver::lease::lease_end`).
    pub lease_end: Option<i64>,
    /// Its lease's claim time (the lease's identity), if it holds one.
    pub claimed_at: Option<i64>,
}

fn delivery_rows(result: &Rows) -> Result<Vec<DeliveryRow>> {
    result.map(|r| {
        Ok(DeliveryRow {
            event: ParkedRow::from_row(r)?,
            destination: r.text("destination")?,
            state: DeliveryState::parse(&r.text("state")?).ok(),
            lease_end: lease_end(r.opt_int("claimed_at")?, r.opt_int("lease_until")?),
            claimed_at: r.opt_int("claimed_at")?,
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

/// What a delivery's holder records about one call (the one recorder,
/// `crate::pipeline::record`, writes it for the consumers, a replay and
/// the drain alike).
#[derive(Debug, Clone, Copy)]
pub enum Record<'a> {
    /// A 2xx. Written whatever the lease: the destination has it, and a
    /// holder that took the row meanwhile then records nothing.
    Delivered,
    /// A failure, written only under the holder's own lease (`claimed_at`).
    /// The row goes to `state`, unless the triage stored its entry while
    /// the lease held: then it closes `dead_lettered`.
    Failed {
        /// The failure.
        failure: &'a Failure,
        /// The state it leaves (`DeliveryState::after_failure`).
        state: DeliveryState,
        /// When its next message is due (a retry), else none.
        due_at: Option<i64>,
    },
}

/// The statement that records one call of `key` by the holder of the lease
/// taken at `claimed_at` (none for an outcome carried by a message): the
/// attempt counted on the row, the lease released.
pub fn outcome_statement(
    db: &D1Database,
    (event_id, destination): Key<'_>,
    claimed_at: Option<i64>,
    record: Record<'_>,
    now_ms: i64,
) -> Result<D1PreparedStatement> {
    match record {
        Record::Delivered => db
            .prepare(
                "UPDATE deliveries SET state = ?3, attempts = attempts + 1, updated_at = ?4, claimed_at = NULL, lease_until = NULL, \
                 delivered_at = ?4, last_error = NULL, handed_off_at = NULL \
                 WHERE event_id = ?1 AND destination = ?2 AND state <> ?3",
            )
            .bind(&[
                text(event_id),
                text(destination),
                text(DeliveryState::Delivered.as_str()),
                int(now_ms),
            ]),
        Record::Failed {
            failure,
            state,
            due_at,
        } => db
            .prepare(
                "UPDATE deliveries SET state = CASE WHEN entry_stored_at IS NOT NULL THEN ?7 ELSE ?3 END, attempts = attempts + 1, \
                 updated_at = ?4, claimed_at = NULL, lease_until = NULL, due_at = ?5, last_error = ?6 \
                 WHERE event_id = ?1 AND destination = ?2 AND state = ?8 AND claimed_at = ?9",
            )
            .bind(&[
                text(event_id),
                text(destination),
                text(state.as_str()),
                int(now_ms),
                due_at.map_or(wasm_bindgen::JsValue::NULL, int),
                text(failure.code.as_str()),
                text(DeliveryState::DeadLettered.as_str()),
                text(DeliveryState::Delivering.as_str()),
                claimed_at.map_or(wasm_bindgen::JsValue::NULL, int),
            ]),
    }
}

/// Gives a leased delivery's lease back without a call (the batch's call
/// budget ran out before it started): pending again, its message sent at
/// once by the caller (outstanding from `now_ms`), nothing counted.
pub fn release_statement(
    db: &D1Database,
    (event_id, destination): Key<'_>,
    claimed_at: i64,
    now_ms: i64,
) -> Result<D1PreparedStatement> {
    db.prepare(
        "UPDATE deliveries SET state = ?3, claimed_at = NULL, lease_until = NULL, due_at = ?4, updated_at = ?4 \
         WHERE event_id = ?1 AND destination = ?2 AND state = ?5 AND claimed_at = ?6",
    )
    .bind(&[
        text(event_id),
        text(destination),
        text(DeliveryState::Pending.as_str()),
        int(now_ms),
        text(DeliveryState::Delivering.as_str()),
        int(claimed_at),
    ])
}

/// Parks a leased delivery (no call was made, or its answer parks it): `parked_at` keeps the first
/// time, a root cause already known is kept, else `cause` stands in.
pub fn park_statement(
    db: &D1Database,
    (event_id, destination): Key<'_>,
    claimed_at: i64,
    cause: Option<ErrorCode>,
    park_cause: &str,
    now_ms: i64,
) -> Result<D1PreparedStatement> {
    db.prepare(
        "UPDATE deliveries SET state = ?3, parked_at = COALESCE(parked_at, ?4), park_cause = ?6, updated_at = ?4, claimed_at = NULL, lease_until = NULL, \
         last_error = COALESCE(last_error, ?5) WHERE event_id = ?1 AND destination = ?2 AND state = ?7 AND claimed_at = ?8",
    )
    .bind(&[
        text(event_id),
        text(destination),
        text(DeliveryState::Parked.as_str()),
        int(now_ms),
        opt_text(cause.map(ErrorCode::as_str)),
        text(park_cause),
        text(DeliveryState::Delivering.as_str()),
        int(claimed_at),
    ])
}

/// Marks deliveries whose hand-off to `webhooks-dlq` was sent: pending (so
/// their event is not swept, and no re-send or drain takes them) until the
/// DLQ worker's triage stores the entry and closes them ([`close_dead_lettered`]);
/// closed at once if the triage was first. Only a row no one leases.
pub fn handed_off_statement(
    db: &D1Database,
    keys: &[Key<'_>],
    now_ms: i64,
) -> Result<D1PreparedStatement> {
    db.prepare(
        "UPDATE deliveries SET state = CASE WHEN entry_stored_at IS NOT NULL THEN ?5 ELSE ?3 END, handed_off_at = ?2, due_at = ?2, updated_at = ?2 \
         WHERE (event_id, destination) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?1)) AND state IN (?3, ?4)",
    )
    .bind(&[
        text(&keys_json(keys)?),
        int(now_ms),
        text(DeliveryState::Pending.as_str()),
        text(DeliveryState::Parked.as_str()),
        text(DeliveryState::DeadLettered.as_str()),
    ])
}

/// Marks `keys` handed to the DLQ and recomputes their events' summaries,
/// in one round trip.
pub async fn mark_handed_off(db: &D1Database, keys: &[Key<'_>], now_ms: i64) -> Result<()> {
    if keys.is_empty() {
        return Ok(());
    }
    crate::db::batch(db, handed_off_statements(db, keys, now_ms)?).await?;
    Ok(())
}

/// The statements of [`mark_handed_off`], for a caller that batches more
/// with them: `keys` marked, then each event's summary once.
pub fn handed_off_statements(
    db: &D1Database,
    keys: &[Key<'_>],
    now_ms: i64,
) -> Result<Vec<D1PreparedStatement>> {
    let mut stmts = vec![handed_off_statement(db, keys, now_ms)?];
    let mut seen: Vec<&str> = Vec::new();
    for (event_id, _) in keys {
        if !seen.contains(event_id) {
            seen.push(event_id);
            stmts.push(summary_statement(db, event_id, 0, None, None)?);
        }
    }
    Ok(stmts)
}

/// The statements that close a delivery whose dead-letter entry the triage
/// stored (or joined), run in the batch that stores it: the row turns
/// `dead_lettered` unless it was delivered meanwhile; while a live lease
/// holds it, only `entry_stored_at` is written, and the holder's failure
/// closes it ([`Record::Failed`]). Then the event's `delivery_status` is
/// summed up again (an event without rows keeps its own). The one
/// statement that makes a row `dead_lettered` for the DLQ, for both workers.
pub fn close_dead_lettered(
    db: &D1Database,
    (event_id, destination): Key<'_>,
    code: &str,
    now_ms: i64,
) -> Result<Vec<D1PreparedStatement>> {
    let live = format!("(state = ?7 AND {} >= ?5)", lease_end_sql("deliveries"));
    Ok(vec![
        db.prepare(format!(
            "UPDATE deliveries SET entry_stored_at = COALESCE(entry_stored_at, ?5), \
             state = CASE WHEN {live} THEN state ELSE ?3 END, \
             last_error = CASE WHEN {live} THEN last_error ELSE ?4 END, \
             claimed_at = CASE WHEN {live} THEN claimed_at END, lease_until = CASE WHEN {live} THEN lease_until END, \
             handed_off_at = NULL, updated_at = ?5 \
             WHERE event_id = ?1 AND destination = ?2 AND state NOT IN (?6, ?3)"
        ))
        .bind(&[
            text(event_id),
            text(destination),
            text(DeliveryState::DeadLettered.as_str()),
            text(code),
            int(now_ms),
            text(DeliveryState::Delivered.as_str()),
            text(DeliveryState::Delivering.as_str()),
        ])?,
        db.prepare(format!(
            "UPDATE events SET delivery_status = ({SUMMARY_SQL}) WHERE event_id = ?1 \
             AND EXISTS (SELECT 1 FROM deliveries WHERE event_id = ?1)"
        ))
        .bind(&[text(event_id)])?,
    ])
}

/// The oldest deliveries parked for `destination` (by `parked_at`, then
/// arrival), at most `limit`. Served by `deliveries_parked`. (A drain step
/// that died holding one leaves its lease to run out; the periodic check
/// settles it.)
pub async fn oldest_parked(
    db: &D1Database,
    destination: &str,
    limit: u32,
) -> Result<Vec<DeliveryRow>> {
    let sql = format!(
        "SELECT {DELIVERY_COLUMNS} FROM deliveries d JOIN events e ON e.event_id = d.event_id \
         WHERE d.destination = ?1 AND d.state = ?2 \
         ORDER BY d.parked_at, e.ingested_at, e.rowid LIMIT ?3"
    );
    db.prepare(sql)
        .bind(&[
            text(destination),
            text(DeliveryState::Parked.as_str()),
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

/// Takes the lease of one parked delivery for a drain step; whether it did.
pub async fn claim_parked(db: &D1Database, key: Key<'_>, lease: Lease) -> Result<bool> {
    let stmt = claim_statement(
        db,
        &[key],
        DeliveryState::claimable(hookrelay_core::parking::Caller::DrainStep),
        lease,
        None,
    )?;
    Ok(!read_keys(&stmt.query().await?)?.is_empty())
}

/// Puts a leased delivery back to `parked` (its destination failed again,
/// or the step stopped before calling it), counting the call when one was
/// made; only under the step's own lease (`claimed_at`).
pub async fn repark(
    db: &D1Database,
    (event_id, destination): Key<'_>,
    claimed_at: i64,
    failure: Option<&Failure>,
    now_ms: i64,
) -> Result<()> {
    let stmt = db
        .prepare(
            "UPDATE deliveries SET state = ?3, claimed_at = NULL, lease_until = NULL, updated_at = ?6, attempts = attempts + ?4, \
             last_error = COALESCE(?5, last_error) WHERE event_id = ?1 AND destination = ?2 AND state = ?7 AND claimed_at = ?8",
        )
        .bind(&[
            text(event_id),
            text(destination),
            text(DeliveryState::Parked.as_str()),
            int(i64::from(failure.is_some())),
            opt_text(failure.map(|f| f.code.as_str())),
            int(now_ms),
            text(DeliveryState::Delivering.as_str()),
            int(claimed_at),
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

/// Up to `limit` deliveries whose lease ran out before `now_ms` with
/// nothing recorded (the holder died, or every write of its outcome
/// failed), for the periodic check to settle. A pull destination's (of
/// `pulls`) is its consumer's: never a call's lease.
pub async fn expired_leases(
    db: &D1Database,
    (now_ms, pulls): (i64, &[String]),
    limit: u32,
) -> Result<Vec<DeliveryRow>> {
    let sql = format!(
        "SELECT {DELIVERY_COLUMNS} FROM deliveries d JOIN events e ON e.event_id = d.event_id \
         WHERE {} AND {} < ?1 AND d.destination NOT IN (SELECT value FROM json_each(?3)) LIMIT ?2",
        open_rows("d", DeliveryState::Delivering),
        lease_end_sql("d")
    );
    db.prepare(sql)
        .bind(&[
            int(now_ms),
            int(i64::from(limit)),
            text(&serde_json::to_string(pulls)?),
        ])?
        .query()
        .await
        .and_then(|r| delivery_rows(&r))
}

/// Settles one run-out lease (taken at `claimed_at`) as a failed `TIMEOUT`
/// attempt: pending, due at `due_at` (or handed off next, `due_at` now);
/// nothing when the holder recorded meanwhile.
pub fn lease_expired_statement(
    db: &D1Database,
    key: Key<'_>,
    claimed_at: i64,
    failure: &Failure,
    due_at: i64,
    now_ms: i64,
) -> Result<D1PreparedStatement> {
    let record = Record::Failed {
        failure,
        state: DeliveryState::Pending,
        due_at: Some(due_at),
    };
    outcome_statement(db, key, Some(claimed_at), record, now_ms)
}

/// Up to `limit` pending deliveries whose message is overdue at `now_ms`
/// (`hookrelay_core::deliver::overdue`), with their events; never a pull
/// destination's (of `pulls`), which has no message.
pub async fn overdue(
    db: &D1Database,
    (overdue_before_ms, pulls): (i64, &[String]),
    limit: u32,
) -> Result<Vec<DeliveryRow>> {
    let sql = format!(
        "SELECT {DELIVERY_COLUMNS} FROM deliveries d JOIN events e ON e.event_id = d.event_id \
         WHERE {} AND d.handed_off_at IS NULL AND COALESCE(d.due_at, d.updated_at) < ?1 \
         AND d.destination NOT IN (SELECT value FROM json_each(?3)) LIMIT ?2",
        open_rows("d", DeliveryState::Pending)
    );
    db.prepare(sql)
        .bind(&[
            int(overdue_before_ms),
            int(i64::from(limit)),
            text(&serde_json::to_string(pulls)?),
        ])?
        .query()
        .await
        .and_then(|r| delivery_rows(&r))
}

/// Marks `keys` outstanding from `now_ms` if their message is still
/// overdue; answers those it marked (the ones to send).
pub async fn mark_resent(
    db: &D1Database,
    keys: &[Key<'_>],
    now_ms: i64,
    (overdue_before_ms, pulls): (i64, &[String]),
) -> Result<Vec<(String, String)>> {
    let stmt = db
        .prepare(format!(
            "UPDATE deliveries SET due_at = ?3 WHERE (event_id, destination) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?1)) AND {OVERDUE} \
             RETURNING event_id, destination"
        ))
        .bind(&[
            text(&keys_json(keys)?),
            int(overdue_before_ms),
            int(now_ms),
            text(DeliveryState::Pending.as_str()),
            text(&serde_json::to_string(pulls)?),
        ])?;
    read_keys(&stmt.query().await?)
}

/// A pull destination's delivery as a pull or an ack reads it: the
/// delivery with its event, when it is due, and its pull lease.
#[derive(Debug, Clone)]
pub struct PullRow {
    /// The delivery with its event (its body read only when due).
    pub row: DeliveryRow,
    /// When it is due (unix ms).
    pub due_at: Option<i64>,
    /// The lease a pull last handed it out under.
    pub lease_id: Option<String>,
    /// When its lease ends, as written (a pull lease always writes it).
    pub lease_until: Option<i64>,
    /// Handed to `webhooks-dlq`, its entry not yet stored.
    pub handed_off: bool,
    /// When a replay last made it pullable again (0027).
    pub revived_at: Option<i64>,
}

fn pull_rows(result: &Rows) -> Result<Vec<PullRow>> {
    let rows = delivery_rows(result)?;
    let extra = result.map(|r| {
        Ok((
            r.opt_int("due_at")?,
            r.opt_text("lease_id")?,
            r.opt_int("lease_until")?,
            r.opt_int("handed_off_at")?.is_some(),
            r.opt_int("revived_at")?,
        ))
    })?;
    Ok(rows
        .into_iter()
        .zip(extra)
        .map(
            |(row, (due_at, lease_id, lease_until, handed_off, revived_at))| PullRow {
                row,
                due_at,
                lease_id,
                lease_until,
                handed_off,
                revived_at,
            },
        )
        .collect())
}

/// The columns of a [`PullRow`]: a delivery's, with its body only when
/// it is due at `?2` (a pull reads one more than it may lease, to say when
/// the next is due, and never needs that one's body).
fn pull_columns() -> String {
    DELIVERY_COLUMNS.replace(
        "e.body,",
        "CASE WHEN COALESCE(d.due_at, 0) <= ?2 THEN e.body END AS body,",
    ) + ", d.due_at, d.lease_id, d.handed_off_at, d.revived_at"
}

/// A pull's one read (DESIGN §4, "Pulling"): up to `limit` of
/// `destination`'s waiting deliveries (pending, not handed to the DLQ, its
/// budget not spent: one whose hand-off was not sent waits for the periodic
/// check's, `pull_unpulled`),
/// oldest due first, by the index `deliveries_pull_due` (0026).
pub async fn pull_waiting(
    db: &D1Database,
    destination: &str,
    now_ms: i64,
    limit: u32,
) -> Result<Vec<PullRow>> {
    // The state is spelt into the SQL, not bound: SQLite uses a partial
    // index only when the query's WHERE names its condition's literal.
    let sql = format!(
        "SELECT {} FROM deliveries d JOIN events e ON e.event_id = d.event_id \
         WHERE d.destination = ?1 AND d.state = '{}' AND d.handed_off_at IS NULL AND d.attempts < {} \
         ORDER BY d.due_at, d.created_at LIMIT ?3",
        pull_columns(),
        DeliveryState::Pending.as_str(),
        ATTEMPT_BUDGET
    );
    db.prepare(sql)
        .bind(&[text(destination), int(now_ms), int(i64::from(limit))])?
        .query()
        .await
        .and_then(|r| pull_rows(&r))
}

/// Up to `limit` pull deliveries (of `pulls`, a JSON list of names) whose
/// lease ended with no ack, for the periodic check to settle as failed
/// attempts.
pub async fn pull_ended(
    db: &D1Database,
    (now_ms, pulls): (i64, &[String]),
    limit: u32,
) -> Result<Vec<PullRow>> {
    // The state is spelt into the SQL, as in `pull_waiting`, for the partial index.
    let sql = format!(
        "SELECT {} FROM deliveries d JOIN events e ON e.event_id = d.event_id \
         WHERE d.state = '{}' AND d.destination IN (SELECT value FROM json_each(?1)) \
         AND d.lease_id IS NOT NULL AND d.lease_until < ?2 AND d.handed_off_at IS NULL LIMIT ?3",
        pull_columns(),
        DeliveryState::Delivering.as_str()
    );
    db.prepare(sql)
        .bind(&[
            text(&serde_json::to_string(pulls)?),
            int(now_ms),
            int(i64::from(limit)),
        ])?
        .query()
        .await
        .and_then(|r| pull_rows(&r))
}

/// Leases `event_ids` of `destination` to a pull under `lease_id`, each
/// only if it is still waiting and due (a concurrent pull took none of
/// them); answers the ones leased.
pub async fn pull_lease(
    db: &D1Database,
    (destination, event_ids): (&str, &[&str]),
    (lease_id, claimed_at, lease_until): (&str, i64, i64),
) -> Result<Vec<String>> {
    let stmt = db
        .prepare(
            "UPDATE deliveries SET state = ?4, claimed_at = ?5, lease_until = ?6, lease_id = ?7, updated_at = ?5 \
             WHERE destination = ?1 AND event_id IN (SELECT value FROM json_each(?2)) \
             AND state = ?3 AND handed_off_at IS NULL AND COALESCE(due_at, 0) <= ?5 AND attempts < ?8 \
             RETURNING event_id",
        )
        .bind(&[
            text(destination),
            text(&serde_json::to_string(event_ids)?),
            text(DeliveryState::Pending.as_str()),
            text(DeliveryState::Delivering.as_str()),
            int(claimed_at),
            int(lease_until),
            text(lease_id),
            int(i64::from(ATTEMPT_BUDGET)),
        ])?;
    stmt.query().await?.map(|r| r.text("event_id"))
}

/// An ack's one read: the deliveries of `destination` among `event_ids`.
pub async fn pull_acked(
    db: &D1Database,
    destination: &str,
    event_ids: &[&str],
    now_ms: i64,
) -> Result<Vec<PullRow>> {
    let sql = format!(
        "SELECT {} FROM deliveries d JOIN events e ON e.event_id = d.event_id \
         WHERE d.destination = ?1 AND d.event_id IN (SELECT value FROM json_each(?3))",
        pull_columns()
    );
    db.prepare(sql)
        .bind(&[
            text(destination),
            int(now_ms),
            text(&serde_json::to_string(event_ids)?),
        ])?
        .query()
        .await
        .and_then(|r| pull_rows(&r))
}

/// Up to `limit` waiting pull deliveries (of `pulls`) the periodic check
/// sends to the DLQ (`hookrelay_core::deliver::pull::unpulled`): due
/// before `due_before_ms` (over `PARK_MAX_AGE`), or with `budget` attempts
/// spent (a hand-off that was not sent). Read without their bodies.
pub async fn pull_unpulled(
    db: &D1Database,
    (due_before_ms, pulls): (i64, &[String]),
    (budget, limit): (u32, u32),
) -> Result<Vec<PullRow>> {
    // The state is spelt into the SQL, as in `pull_waiting`, for the partial
    // index; `?2` is 0 so that no body is read.
    let sql = format!(
        "SELECT {} FROM deliveries d JOIN events e ON e.event_id = d.event_id \
         WHERE d.destination IN (SELECT value FROM json_each(?1)) AND d.state = '{}' AND d.handed_off_at IS NULL \
         AND (d.due_at < ?3 OR d.attempts >= ?4) ORDER BY d.due_at LIMIT ?5",
        pull_columns(),
        DeliveryState::Pending.as_str()
    );
    db.prepare(sql)
        .bind(&[
            text(&serde_json::to_string(pulls)?),
            int(0),
            int(due_before_ms),
            int(i64::from(budget)),
            int(i64::from(limit)),
        ])?
        .query()
        .await
        .and_then(|r| pull_rows(&r))
}

/// Makes a pull destination's delivery pullable again with a fresh budget
/// (a replay, DESIGN §3): pending and due at `now_ms`, no attempt counted,
/// no lease, no hand-off and no entry, `revived_at` now (so its next dead
/// letter is an entry of its own); its event's summary recomputed. Only
/// while it is not delivered and no live lease holds it (what
/// `hookrelay_core::deliver::pull::revival` decided, checked again in the
/// write). Whether it changed.
pub async fn pull_revive(
    db: &D1Database,
    (event_id, destination): Key<'_>,
    now_ms: i64,
) -> Result<bool> {
    let revive = db
        .prepare(
            "UPDATE deliveries SET state = ?3, attempts = 0, due_at = ?4, updated_at = ?4, revived_at = ?4, \
             handed_off_at = NULL, entry_stored_at = NULL, claimed_at = NULL, lease_until = NULL, lease_id = NULL \
             WHERE event_id = ?1 AND destination = ?2 AND state <> ?5 \
             AND NOT (state = ?6 AND COALESCE(lease_until, 0) >= ?4)",
        )
        .bind(&[
            text(event_id),
            text(destination),
            text(DeliveryState::Pending.as_str()),
            int(now_ms),
            text(DeliveryState::Delivered.as_str()),
            text(DeliveryState::Delivering.as_str()),
        ])?;
    let results = crate::db::batch(
        db,
        vec![revive, summary_statement(db, event_id, 0, None, None)?],
    )
    .await?;
    Ok(results.first().map_or(0, |r| r.changes()) > 0)
}

// ---------------------------------------------------------------------------
// The pull destinations' figures (issue 43: the stats and the `parked_oldest`
// alarm per pull destination, `hookrelay_core::deliver::pull_figures`). Kept
// together here, apart from the pull's and the ack's statements above.
// ---------------------------------------------------------------------------

/// Per pull destination of `pulls`, its waiting deliveries (pending, not
/// handed to the DLQ), how many are due at `now_ms`, and the earliest due
/// time with its event id, by the index `deliveries_pull_due` (0026). A
/// row without `due_at` (none is written so) counts as due since its last
/// change, as the periodic check reads one. One statement, shared by the
/// relay's internal figures route and the watchdog's batch.
pub fn pull_waiting_figures(
    db: &D1Database,
    pulls: &[String],
    now_ms: i64,
) -> Result<D1PreparedStatement> {
    // The state is spelt into the SQL, not bound, as in `pull_waiting`: SQLite
    // uses a partial index only when the query's WHERE names its condition.
    // With one min() the bare `event_id` is the earliest row's.
    let sql = format!(
        "SELECT d.destination AS destination, count(*) AS waiting, \
         sum(COALESCE(d.due_at, d.updated_at) <= ?2) AS due, \
         min(COALESCE(d.due_at, d.updated_at)) AS earliest, d.event_id AS event_id \
         FROM deliveries d WHERE d.destination IN (SELECT value FROM json_each(?1)) \
         AND d.state = '{}' AND d.handed_off_at IS NULL GROUP BY d.destination",
        DeliveryState::Pending.as_str()
    );
    db.prepare(sql)
        .bind(&[text(&serde_json::to_string(pulls)?), int(now_ms)])
}

/// The answer to [`pull_waiting_figures`].
pub fn read_pull_waiting_figures(
    rows: &Rows,
) -> Result<Vec<hookrelay_core::deliver::pull_figures::WaitingRead>> {
    rows.map(|r| {
        let earliest = match (r.opt_text("event_id")?, r.opt_int("earliest")?) {
            (Some(id), Some(at)) => Some((id, at)),
            _ => None,
        };
        Ok(hookrelay_core::deliver::pull_figures::WaitingRead {
            destination: r.text("destination")?,
            waiting: r.int("waiting")?.max(0) as u64,
            due: r.opt_int("due")?.unwrap_or(0).max(0) as u64,
            earliest,
        })
    })
}

/// Per pull destination of `pulls`, its deliveries leased to a consumer
/// (`delivering`).
pub fn pull_leased_figures(db: &D1Database, pulls: &[String]) -> Result<D1PreparedStatement> {
    // Through `deliveries_open`: only the `delivering` rows (few: each is
    // a live lease), never every row a destination ever had.
    let sql = format!(
        "SELECT d.destination AS destination, count(*) AS leased FROM deliveries d \
         WHERE {} AND d.destination IN (SELECT value FROM json_each(?1)) GROUP BY d.destination",
        open_rows("d", DeliveryState::Delivering)
    );
    db.prepare(sql)
        .bind(&[text(&serde_json::to_string(pulls)?)])
}

/// The answer to [`pull_leased_figures`]: (destination, leased).
pub fn read_pull_leased_figures(rows: &Rows) -> Result<Vec<(String, u64)>> {
    rows.map(|r| Ok((r.text("destination")?, r.int("leased")?.max(0) as u64)))
}

#[cfg(test)]
mod open_rows_tests {
    use super::*;

    #[test]
    fn open_rows_repeat_the_partial_index_condition_word_for_word() {
        let index = include_str!("../../../migrations/0024_delivery_accounting.sql");
        let spelt = open_rows("d", DeliveryState::Delivering);
        let condition = spelt
            .split(" AND ")
            .next()
            .unwrap()
            .trim_start_matches("d.");
        assert!(
            index.contains(&format!("WHERE {condition};")),
            "deliveries_open's condition changed: {condition}"
        );
        assert!(spelt.ends_with("d.state = 'delivering'"), "{spelt}");
    }
}
