//! The pull API's glue (DESIGN §4, "Pulling"): a pull is one read of the
//! destination's waiting deliveries and, when any is due, one write of the
//! lease the core picked (`hookrelay_core::deliver::pull`); an ack is one
//! read of the deliveries it names, then each settlement the core decided,
//! written with the statements the periodic check records a failed attempt
//! with (`super::overdue`). Nothing is decided here.

use super::overdue::{hand_off, settle_statements};
use crate::db::{deliveries, event_steps, payloads};
use crate::parking::{handoff_json, send_handoffs};
use crate::{log, metrics};
use hookrelay_core::deliver::destinations::PullSettings;
use hookrelay_core::deliver::pull::{self, Ack, AckState, PulledRow, Revival, Settlement, Waiting};
use hookrelay_core::metrics::{Component, Metric, MetricName};
use hookrelay_core::retry::delivery_attempts::{AfterCall, ATTEMPT_BUDGET};
use hookrelay_core::retry::policy::RetrySchedule;
use hookrelay_core::state::error_code::Failure;
use hookrelay_core::state::{DeliveryState, EventStep};
use hookrelay_core::support::redact::redact_map;
use serde::Serialize;
use std::collections::BTreeMap;
use worker::{D1Database, Env};

/// One pulled delivery, as the answer carries it.
#[derive(Debug, Serialize)]
pub struct PulledItem {
    /// The delivery, within its destination (the event's id).
    pub delivery_id: String,
    /// The lease an ack names.
    pub lease_id: String,
    /// The event.
    pub event_id: String,
    /// Its idempotency key.
    pub key: String,
    /// Its source.
    pub source: String,
    /// When the relay accepted it (unix ms).
    pub received_at: i64,
    /// This attempt's number, as counted on the row.
    pub attempt: u32,
    /// The provider's content type.
    pub content_type: Option<String>,
    /// The provider's headers, lower-case, credentials and signatures
    /// redacted.
    pub headers: BTreeMap<String, String>,
    /// The body as text, byte-exact.
    pub body: String,
    /// When the lease ends (unix ms).
    pub lease_until: i64,
}

/// A pull's answer.
#[derive(Debug, Serialize)]
pub struct PullAnswer {
    /// The deliveries leased.
    pub items: Vec<PulledItem>,
    /// When the next waiting one is due, from now (none: none waits).
    pub next_due_in_ms: Option<i64>,
}

/// Leases up to `max` of `destination`'s due deliveries under `lease_id`.
pub async fn pull(
    db: &D1Database,
    (destination, settings): (&str, PullSettings),
    (max, lease_id): (u32, String),
    now: i64,
) -> worker::Result<PullAnswer> {
    let rows = deliveries::pull_waiting(db, destination, now, max + 1).await?;
    let waiting: Vec<Waiting> = rows
        .iter()
        .map(|r| Waiting {
            due_at: r.due_at,
            body_bytes: r.row.event.body_bytes.max(0) as u64,
        })
        .collect();
    let pick = pull::pick(&waiting, max, now);
    if pick.count == 0 {
        // An empty pull: the one read, no write.
        return Ok(PullAnswer {
            items: Vec::new(),
            next_due_in_ms: pick.next_due_in_ms,
        });
    }
    let lease = pull::lease(now, settings, lease_id);
    let picked = &rows[..pick.count];
    let ids: Vec<&str> = picked
        .iter()
        .map(|r| r.row.event.event_id.as_str())
        .collect();
    let until = (lease.lease_id.as_str(), lease.claimed_at, lease.lease_until);
    let leased = deliveries::pull_lease(db, (destination, &ids), until).await?;
    let stored = claim_checked_bodies(db, picked, &leased).await?;
    let items = picked
        .iter()
        .filter(|r| leased.contains(&r.row.event.event_id))
        .map(|r| item(r, &lease, &stored))
        .collect();
    Ok(PullAnswer {
        items,
        next_due_in_ms: pick.next_due_in_ms,
    })
}

/// The bodies of the leased deliveries that were too large to keep inline.
async fn claim_checked_bodies(
    db: &D1Database,
    picked: &[deliveries::PullRow],
    leased: &[String],
) -> worker::Result<hookrelay_core::support::vec_map::VecMap<String, String>> {
    let refs: Vec<&str> = picked
        .iter()
        .filter(|r| r.row.event.body.is_none() && leased.contains(&r.row.event.event_id))
        .map(|r| r.row.event.event_id.as_str())
        .collect();
    if refs.is_empty() {
        return Ok(Default::default());
    }
    payloads::load_many(db, &refs).await
}

fn item(
    r: &deliveries::PullRow,
    lease: &pull::PullLease,
    stored: &hookrelay_core::support::vec_map::VecMap<String, String>,
) -> PulledItem {
    let e = &r.row.event;
    let headers: BTreeMap<String, String> = redact_map(
        &serde_json::from_str::<BTreeMap<String, String>>(&e.headers).unwrap_or_default(),
    );
    let body = e
        .body
        .clone()
        .or_else(|| stored.get(&e.event_id).cloned())
        .unwrap_or_default();
    PulledItem {
        delivery_id: e.event_id.clone(),
        lease_id: lease.lease_id.clone(),
        event_id: e.event_id.clone(),
        key: e.idempotency_key.clone(),
        source: e.source.clone(),
        received_at: e.received_at,
        attempt: e.delivery_attempts.max(0) as u32 + 1,
        content_type: headers.get("content-type").cloned(),
        headers,
        body,
        lease_until: lease.lease_until,
    }
}

/// One ack result's answer.
#[derive(Debug, Serialize)]
pub struct AckAnswer {
    /// The delivery acked.
    pub delivery_id: String,
    /// Its state now: `delivered`, `pending`, `dead_lettered`,
    /// `lease_expired` or `unknown`.
    pub state: &'static str,
    /// When it is due again, for `pending`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub due_at: Option<i64>,
}

/// Settles each of `acks` of `destination`, in order.
pub async fn ack(
    (env, db): (&Env, &D1Database),
    destination: &str,
    acks: &[Ack],
    retry: &RetrySchedule,
    now: i64,
) -> worker::Result<Vec<AckAnswer>> {
    let ids: Vec<&str> = acks.iter().map(|a| a.delivery_id.as_str()).collect();
    let rows = deliveries::pull_acked(db, destination, &ids, now).await?;
    let mut out = Vec::with_capacity(acks.len());
    for a in acks {
        let row = rows.iter().find(|r| r.row.event.event_id == a.delivery_id);
        let seen = row.map(pulled);
        let settlement = pull::settle(seen.as_ref(), a, now, retry);
        let state = match (row, &settlement) {
            (Some(r), Settlement::Deliver) => delivered(db, r, now).await?,
            (Some(r), Settlement::Fail(after)) => failed(env, db, r, after, now).await?,
            _ => settlement.answer(now),
        };
        out.push(AckAnswer {
            delivery_id: a.delivery_id.clone(),
            state: state.as_str(),
            due_at: match state {
                AckState::Pending { due_at } => Some(due_at),
                _ => None,
            },
        });
    }
    Ok(out)
}

/// Settles pull leases that ended with no ack (the periodic check): each a
/// failed `TIMEOUT` attempt, retried on the schedule or handed off at the
/// sixth, written only if the lease is still the row's (an ack that came
/// meanwhile wins). How many it settled.
pub async fn settle_ended(
    (env, db): (&Env, &D1Database),
    pulls: &[String],
    (retry, limit): (&RetrySchedule, u32),
    now: i64,
) -> worker::Result<usize> {
    if pulls.is_empty() {
        return Ok(0);
    }
    let mut settled = 0;
    for r in deliveries::pull_ended(db, (now, pulls), limit).await? {
        if let Some(after) = pull::lease_ended(&pulled(&r), now, retry) {
            if !matches!(
                failed(env, db, &r, &after, now).await?,
                AckState::LeaseExpired
            ) {
                settled += 1;
            }
        }
    }
    Ok(settled)
}

/// What a replay did to a pull destination's delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replayed {
    /// As `pull::revival` decided (`Revive`: it is pullable again, with a
    /// fresh budget).
    Decided(Revival),
    /// No such delivery.
    Missing,
}

/// A replay of `event_id`'s delivery to the pull destination
/// `destination` (DESIGN §3): pullable again with a fresh budget, unless it
/// was delivered or a consumer holds it. One read, then one write.
pub async fn revive(
    db: &D1Database,
    (event_id, destination): (&str, &str),
    now: i64,
) -> worker::Result<Replayed> {
    for _ in 0..2 {
        let rows = deliveries::pull_acked(db, destination, &[event_id], now).await?;
        let Some(r) = rows.first() else {
            return Ok(Replayed::Missing);
        };
        let state = r.row.state.unwrap_or(DeliveryState::Pending);
        let decided = pull::revival(state, r.lease_until, now);
        if decided != Revival::Revive
            || deliveries::pull_revive(db, (event_id, destination), now).await?
        {
            return Ok(Replayed::Decided(decided));
        }
        // Delivered or pulled between the read and the write: read again.
    }
    Ok(Replayed::Decided(Revival::Held { until: now }))
}

/// Sends to the DLQ the waiting pull deliveries of `pulls` that no
/// consumer pulled within `PARK_MAX_AGE` (`max_age_ms`), or whose sixth
/// failed attempt's hand-off was not sent (`pull::unpulled`): at most
/// `limit` per check. The hand-offs are sent before the rows are marked
/// (a failure in between sends one again, and the DLQ joins it to its
/// entry); a row a pull leased meanwhile is not marked, and its consumer's
/// ack settles it. How many it sent.
pub async fn expire_unpulled(
    (env, db): (&Env, &D1Database),
    pulls: &[String],
    (max_age_ms, limit): (i64, u32),
    now: i64,
) -> worker::Result<usize> {
    if pulls.is_empty() {
        return Ok(0);
    }
    let due_before = pull::unpulled_due_before(now, max_age_ms);
    let rows = deliveries::pull_unpulled(db, (due_before, pulls), (ATTEMPT_BUDGET, limit)).await?;
    let mut handoffs = Vec::new();
    let mut keys = Vec::new();
    let mut failures = Vec::new();
    for r in &rows {
        let e = &r.row.event;
        let waiting = pull::WaitingRow {
            due_at: r.due_at.unwrap_or(now),
            attempts: e.delivery_attempts.max(0) as u32,
            last_error: e.last_error(),
        };
        let Some(failure) = pull::unpulled(&r.row.destination, &waiting, now, max_age_ms) else {
            continue;
        };
        metrics::count(
            Metric::new(MetricName::DeadLetterHandoff, Component::Deliveries)
                .source(&e.source)
                .code(failure.code),
            1,
        );
        log::warn(
            Component::Deliveries,
            "pull_unpulled_dead_lettered",
            log::fields! {"id": e.event_id, "destination": r.row.destination, "code": failure.code, "due_at": waiting.due_at},
        );
        let to = (r.row.destination.as_str(), r.revived_at);
        handoffs.push(handoff_json(e, to, failure.clone(), waiting.attempts, now));
        keys.push((e.event_id.as_str(), r.row.destination.as_str()));
        failures.push(failure);
    }
    if keys.is_empty() {
        return Ok(0);
    }
    send_handoffs(env, &handoffs).await?;
    mark_unpulled(db, &keys, &failures, now).await?;
    Ok(keys.len())
}

/// Marks the unpulled deliveries of `keys` handed off, each with its
/// story's step, and their events summed up again, in one round trip.
async fn mark_unpulled(
    db: &D1Database,
    keys: &[(&str, &str)],
    failures: &[Failure],
    now: i64,
) -> worker::Result<()> {
    let details: Vec<String> = keys
        .iter()
        .zip(failures)
        .map(|((_, d), f)| format!("{d}: {}", f.message).chars().take(200).collect())
        .collect();
    let steps: Vec<event_steps::StepRecord<'_>> = keys
        .iter()
        .zip(failures)
        .zip(&details)
        .map(|(((event_id, _), f), detail)| event_steps::StepRecord {
            event_id,
            step: EventStep::DeadLettered,
            component: Component::Deliveries,
            code: Some(f.code),
            detail,
            at_ms: now,
        })
        .collect();
    let mut stmts = deliveries::handed_off_statements(db, keys, now)?;
    stmts.extend(event_steps::insert_many(db, &steps)?);
    crate::db::batch(db, stmts).await?;
    Ok(())
}

fn pulled(r: &deliveries::PullRow) -> PulledRow {
    PulledRow {
        state: r.row.state.unwrap_or(DeliveryState::Pending),
        attempts: r.row.event.delivery_attempts.max(0) as u32,
        lease_id: r.lease_id.clone(),
        lease_until: r.lease_until,
        handed_off: r.handed_off,
    }
}

/// A 2xx: the row `delivered` (written whatever lease it holds, as any
/// 2xx is), its attempt counted, its story told, its event's summary.
async fn delivered(db: &D1Database, r: &deliveries::PullRow, now: i64) -> worker::Result<AckState> {
    let key = (r.row.event.event_id.as_str(), r.row.destination.as_str());
    let record = deliveries::Record::Delivered;
    crate::db::batch(
        db,
        vec![
            deliveries::outcome_statement(db, key, None, record, now)?,
            deliveries::summary_statement(db, key.0, 1, Some(now), None)?,
        ],
    )
    .await?;
    Ok(AckState::Delivered)
}

/// A failed attempt under the live lease: the row pending again (due
/// after the delay) or handed to the DLQ, as the core decided.
async fn failed(
    env: &Env,
    db: &D1Database,
    r: &deliveries::PullRow,
    after: &AfterCall,
    now: i64,
) -> worker::Result<AckState> {
    let (Some(claimed_at), failure) = (r.row.claimed_at, failure_of(after)) else {
        return Ok(AckState::LeaseExpired);
    };
    let before = r.row.event.delivery_attempts.max(0) as u32;
    let due_at = after.due_at(now).unwrap_or(now);
    let step = EventStep::DeliveryFailed;
    let stmts = settle_statements(
        db,
        (&r.row, claimed_at),
        (&failure, step),
        (before, due_at),
        now,
    )?;
    let results = crate::db::batch(db, stmts).await?;
    if results.first().map_or(0, |w| w.changes()) == 0 {
        // Settled meanwhile (another ack of the same lease).
        return Ok(AckState::LeaseExpired);
    }
    if let AfterCall::HandOff { failure } = after {
        let revived = (&r.row, r.revived_at);
        hand_off((env, db), revived, failure.clone(), before + 1, now).await?;
    }
    Ok(Settlement::Fail(after.clone()).answer(now))
}

fn failure_of(after: &AfterCall) -> Failure {
    match after {
        AfterCall::Retry { failure, .. } | AfterCall::HandOff { failure } => failure.clone(),
        AfterCall::Delivered => Failure::new(
            hookrelay_core::state::error_code::ErrorCode::Unknown,
            "not a failure",
        ),
    }
}
