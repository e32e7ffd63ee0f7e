//! Phase 1 of a delivery batch: in one round trip, take the lease of each
//! delivery on its row, read each one with its event (body and headers),
//! the claim-checked bodies, and its destinations' breakers and drains.
//! The claim runs first in the batch's transaction, so the read sees each
//! row as the claim left it.

use super::item::{DeliveryItem, Processed};
use crate::db::{breakers, deliveries, drains, error_message, payloads, Rows};
use crate::log;
use hookrelay_core::deliver::breaker::BreakerState;
use hookrelay_core::deliver::lease::{lease_until, Holder};
use hookrelay_core::deliver::overdue::due_by;
use hookrelay_core::deliver::DeliveryConfig;
use hookrelay_core::metrics::Component;
use hookrelay_core::parking::{parks_behind_drain, Caller};
use hookrelay_core::retry::disposition::Outcome;
use hookrelay_core::state::error_code::{ErrorCode, Failure};
use hookrelay_core::state::DeliveryState;
use hookrelay_core::state::DownstreamResult;
use hookrelay_core::support::d1_error::classify_d1_error;
use hookrelay_core::support::vec_map::VecMap;
use worker::D1Database;

/// A batch's destinations as D1 holds them.
#[derive(Debug, Default)]
pub(super) struct Destinations {
    /// The destinations with a drain running, each with its recorded cause.
    pub draining: VecMap<String, Option<ErrorCode>>,
    /// The stored breakers (a destination without a row is absent);
    /// `None` when D1 could not say.
    pub breakers: Option<VecMap<String, (BreakerState, i64)>>,
}

/// What the claim came to.
pub(super) struct Claimed {
    /// Per request, what it came to when it needs no call (in request order).
    pub done: Vec<Option<Processed>>,
    /// The leased deliveries, each with its request's index.
    pub leased: Vec<(usize, DeliveryItem)>,
    /// The claim-checked bodies of the leased events.
    pub stored: VecMap<String, String>,
    /// Their destinations.
    pub destinations: Destinations,
    /// The lease taken (its claim time names it in every later write).
    pub lease: deliveries::Lease,
}

fn finished(downstream: DownstreamResult, outcome: Outcome) -> Option<Processed> {
    Some(Processed::delivery(downstream, outcome))
}

fn failed(f: Failure) -> Option<Processed> {
    finished(DownstreamResult::Failed, Outcome::Failed(f))
}

/// Claims `requests` (event id, destination) for `caller` in one round trip.
pub(super) async fn claim(
    db: &D1Database,
    requests: &[(String, String)],
    (cfg, budget_ms): (&DeliveryConfig, Option<i64>),
    (caller, component): (Caller, Component),
    now_ms: i64,
) -> Claimed {
    let (done, keys, names) = listed(requests, cfg);
    let longest = names
        .iter()
        .map(|n| cfg.timeout_of(n))
        .max()
        .unwrap_or(cfg.timeout_ms);
    let lease = deliveries::Lease::new(
        now_ms,
        lease_until(now_ms, Holder::batch(caller, longest, budget_ms)),
    );
    let mut claimed = Claimed {
        done,
        leased: Vec::new(),
        stored: VecMap::new(),
        destinations: Destinations::default(),
        lease,
    };
    if keys.is_empty() {
        return claimed;
    }
    let with_drains = parks_behind_drain(true, cfg.breaker_open_action, caller);
    let results = match statements(db, &keys, &names, (caller, lease), with_drains) {
        Ok(stmts) => crate::db::batch(db, stmts).await,
        Err(e) => Err(e),
    };
    let read = results.and_then(|r| read(&r, with_drains));
    let (leased_keys, rows, stored, destinations) = match read {
        Ok(r) => r,
        Err(e) => {
            let f = classify_d1_error(&error_message(&e));
            fail_listed(&mut claimed.done, requests, &keys, f);
            return claimed;
        }
    };
    claimed.stored = stored;
    claimed.destinations = destinations.unwrap_or_else(|| {
        log::error(
            component,
            "breaker_unreadable",
            log::fields! {"destinations": names},
        );
        Destinations::default()
    });
    place(
        &mut claimed,
        requests,
        &leased_keys,
        &rows,
        cfg,
        (caller, component),
    );
    claimed
}

/// The requests to claim, each (event, destination) once, and their
/// destinations; a request that needs no claim is answered in `done`.
type Listed<'a> = (
    Vec<Option<Processed>>,
    Vec<(&'a str, &'a str)>,
    Vec<&'a str>,
);

fn listed<'a>(requests: &'a [(String, String)], cfg: &DeliveryConfig) -> Listed<'a> {
    let mut done: Vec<Option<Processed>> = vec![None; requests.len()];
    let mut keys: Vec<(&str, &str)> = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    for (i, (event_id, destination)) in requests.iter().enumerate() {
        if cfg.destination(destination).is_none() {
            done[i] = failed(not_configured(destination));
            continue;
        }
        let key = (event_id.as_str(), destination.as_str());
        // A request listed twice (two messages of one delivery in a
        // batch) is leased by its first listing only.
        if keys.contains(&key) {
            done[i] = finished(DownstreamResult::InFlightElsewhere, Outcome::Duplicate);
            continue;
        }
        keys.push(key);
        if !names.contains(&key.1) {
            names.push(key.1);
        }
    }
    (done, keys, names)
}

/// Places each request the claim read: leased (an item to call), or what
/// it came to without a call.
fn place(
    claimed: &mut Claimed,
    requests: &[(String, String)],
    leased_keys: &[(String, String)],
    rows: &[deliveries::DeliveryRow],
    cfg: &DeliveryConfig,
    (caller, component): (Caller, Component),
) {
    for (i, (event_id, destination)) in requests.iter().enumerate() {
        if claimed.done[i].is_some() {
            continue;
        }
        let row = rows
            .iter()
            .find(|r| r.event.event_id == *event_id && r.destination == *destination);
        let held = leased_keys
            .iter()
            .any(|(e, d)| e == event_id && d == destination);
        claimed.done[i] = match (row, held) {
            (Some(row), true) => {
                claimed.leased.push((
                    i,
                    DeliveryItem {
                        event: row.event.to_queued_event(),
                        destination: destination.clone(),
                        timeout_ms: cfg.timeout_of(destination),
                        attempts_before: row.event.delivery_attempts.max(0) as u32,
                    },
                ));
                None
            }
            (Some(row), false) => not_leased(row.state, row.lease_end),
            (None, _) if caller == Caller::Replay => failed(Failure::new(
                ErrorCode::Unknown,
                "this delivery's event is no longer in D1 (swept by retention); restore it, or archive the entry",
            )),
            (None, _) => {
                // The event's row is gone (swept by retention): nothing
                // is left to deliver.
                log::warn(
                    component,
                    "delivery_row_missing",
                    log::fields! {"id": event_id, "destination": destination},
                );
                finished(DownstreamResult::NotForwarded, Outcome::Duplicate)
            }
        };
    }
}

/// Why a delivery that is not leased needs no call now. One another
/// holder leases carries when that lease ends (`Processed::lease_end`), so
/// a consumer's message looks again just past it, spending nothing.
fn not_leased(state: Option<DeliveryState>, lease_end: Option<i64>) -> Option<Processed> {
    use DeliveryState::*;
    let downstream = match state {
        Some(Delivered) => DownstreamResult::AlreadyDelivered,
        Some(Parked) => DownstreamResult::Parked,
        Some(Delivering) => DownstreamResult::InFlightElsewhere,
        Some(DeadLettered) | Some(Pending) | None => DownstreamResult::NotForwarded,
    };
    let outcome = match state {
        Some(Parked) => Outcome::Parked,
        _ => Outcome::Duplicate,
    };
    let mut p = finished(downstream, outcome)?;
    if state == Some(Delivering) {
        p.lease_end = lease_end;
    }
    Some(p)
}

/// The failure of a delivery to a destination the relay no longer has.
pub fn not_configured(destination: &str) -> Failure {
    Failure::new(
        ErrorCode::SchemaMismatch,
        format!("destination '{destination}' is not configured in the relay (DESTINATIONS, or a source's downstream); nothing was called"),
    )
}

fn fail_listed(
    done: &mut [Option<Processed>],
    requests: &[(String, String)],
    keys: &[(&str, &str)],
    f: Failure,
) {
    for (i, (e, d)) in requests.iter().enumerate() {
        if done[i].is_none() && keys.contains(&(e.as_str(), d.as_str())) {
            done[i] = failed(f.clone());
        }
    }
}

fn statements(
    db: &D1Database,
    keys: &[(&str, &str)],
    names: &[&str],
    (caller, lease): (Caller, deliveries::Lease),
    with_drains: bool,
) -> worker::Result<Vec<worker::D1PreparedStatement>> {
    // A consumer's message calls only a delivery that is due: an extra
    // copy of it (a re-send, a no-call retry) waits out the backoff too.
    let due = (caller == Caller::Consumer).then(|| due_by(lease.at));
    let ids: Vec<&str> = keys.iter().map(|k| k.0).collect();
    let mut stmts = vec![
        deliveries::claim_statement(db, keys, DeliveryState::claimable(caller), lease, due)?,
        deliveries::read_statement(db, keys)?,
        payloads::bodies_statement(db, &ids)?,
        breakers::load_many(db, names)?,
    ];
    if with_drains {
        stmts.push(drains::active(db, names)?);
    }
    Ok(stmts)
}

type Read = (
    Vec<(String, String)>,
    Vec<deliveries::DeliveryRow>,
    VecMap<String, String>,
    Option<Destinations>,
);

fn read(results: &[Rows], with_drains: bool) -> worker::Result<Read> {
    let at = |i: usize| {
        results.get(i).ok_or_else(|| {
            worker::Error::RustError("D1 returned fewer results than statements".into())
        })
    };
    let leased = deliveries::read_keys(at(0)?)?;
    let rows = deliveries::read_rows(at(1)?)?;
    let stored = payloads::bodies_of(at(2)?)?;
    // An unreadable breaker or drain is not a failed claim: the run
    // starts from `STATE_WHEN_UNREADABLE`, and its write finds the real row.
    let destinations = (|| {
        let breakers = breakers::parse_many(at(3)?)?;
        let draining = if with_drains {
            drains::parse_active(at(4)?)?.into_iter().collect()
        } else {
            VecMap::new()
        };
        Ok::<_, worker::Error>(Destinations {
            draining,
            breakers: Some(breakers),
        })
    })()
    .ok();
    Ok((leased, rows, stored, destinations))
}
