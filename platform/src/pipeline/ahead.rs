//! What the ingest batch also does for the deliveries that may follow, in
//! its own transaction: the claim of every event that may need a call,
//! and the read of its destinations' breakers and drains. A forwarding
//! batch then costs one round trip before its calls instead of three.
//!
//! Which events may need a call is known before ingest: those whose source
//! forwards (`hookrelay_core::delivery_plan::may_need_call`). The claim
//! runs after the upserts in the same transaction, so it sees each row as
//! ingest left it, and its status filter (`delivery_plan::claimable`)
//! leases exactly the events the caller would call that no one holds: a
//! duplicate of a delivered, failed or parked event is not leased.

use crate::db::Rows;
use crate::db::{breakers, drains, error_message, events};
use crate::log;
use hookrelay_core::breaker::BreakerState;
use hookrelay_core::config::DeliveryConfig;
use hookrelay_core::delivery_plan::{claimable, may_need_call};
use hookrelay_core::error_code::ErrorCode;
use hookrelay_core::metrics::Component;
use hookrelay_core::parking::{parks_behind_drain, Caller};
use hookrelay_core::state::lease_stale_before;
use hookrelay_core::vec_map::VecMap;
use worker::{D1Database, D1PreparedStatement, Result};

use super::Item;

/// A batch's destinations as D1 holds them.
#[derive(Debug, Default)]
pub(super) struct Destinations {
    /// The destinations with a drain running, each with its recorded cause.
    pub draining: VecMap<String, Option<ErrorCode>>,
    /// The stored breakers (a destination without a row is absent);
    /// `None` when D1 could not say.
    pub breakers: Option<VecMap<String, (BreakerState, i64)>>,
}

/// The read of `urls`' breakers, then (when `with_drains`) their drains.
pub(super) fn destination_statements(
    db: &D1Database,
    urls: &[&str],
    with_drains: bool,
) -> Result<Vec<D1PreparedStatement>> {
    let mut stmts = vec![breakers::load_many(db, urls)?];
    if with_drains {
        stmts.push(drains::active(db, urls)?);
    }
    Ok(stmts)
}

/// Reads the results of [`destination_statements`]. If D1 cannot say,
/// none is taken as draining and every breaker as unreadable (the run
/// starts from `STATE_WHEN_UNREADABLE`; its write then finds the real row).
pub(super) fn read_destinations(
    results: Result<&[Rows]>,
    urls: usize,
    component: Component,
) -> Destinations {
    let read = results.and_then(|results| {
        let stored = breakers::parse_many(results.first().ok_or_else(missing)?)?;
        let draining = match results.get(1) {
            Some(r) => drains::parse_active(r)?.into_iter().collect(),
            None => VecMap::new(),
        };
        Ok((draining, stored))
    });
    match read {
        Ok((draining, stored)) => Destinations {
            draining,
            breakers: Some(stored),
        },
        Err(e) => {
            log::error(
                component,
                "breaker_unreadable",
                log::fields! {"destinations": urls, "err": error_message(&e)},
            );
            Destinations::default()
        }
    }
}

fn missing() -> worker::Error {
    worker::Error::RustError("D1 returned fewer results than statements".into())
}

/// Whether a caller's batch reads its destinations' drains: only when an
/// event would park behind one.
pub(super) fn with_drains(cfg: &DeliveryConfig, caller: Caller) -> bool {
    parks_behind_drain(true, cfg.breaker_open_action, caller)
}

/// The claim and reads one batch rides on its ingest.
pub(super) struct Ahead<'a> {
    /// The event ids the claim lists, in item order.
    ids: Vec<&'a str>,
    /// The destinations of those events, each once, in arrival order.
    urls: Vec<&'a str>,
    with_drains: bool,
}

/// What the riders of [`Ahead`] answered.
pub(super) struct ReadAhead {
    /// The ids the claim leased, or why they cannot be read.
    pub leased: Result<Vec<String>>,
    /// The destinations of the events that may need a call.
    pub destinations: Destinations,
}

impl<'a> Ahead<'a> {
    /// The events of `items` that may need a call, and their destinations.
    pub fn plan(items: &[Item<'a>], cfg: &'a DeliveryConfig, caller: Caller) -> Self {
        let mut ids = Vec::new();
        let mut urls: Vec<&str> = Vec::new();
        for item in items {
            let event = item.event;
            if !may_need_call(cfg.forwards(&event.source)) {
                continue;
            }
            let url = cfg.downstreams[&event.source].as_str();
            ids.push(event.event_id.as_str());
            if !urls.contains(&url) {
                urls.push(url);
            }
        }
        Ahead {
            ids,
            urls,
            with_drains: with_drains(cfg, caller),
        }
    }

    /// The statements to append to the ingest batch: the claim, then the
    /// destination reads; none when no event may need a call.
    pub fn statements(
        &self,
        db: &D1Database,
        cfg: &DeliveryConfig,
        caller: Caller,
        now_ms: i64,
    ) -> Result<Vec<D1PreparedStatement>> {
        if self.ids.is_empty() {
            return Ok(Vec::new());
        }
        let stale_before = lease_stale_before(now_ms, cfg.timeout_ms);
        let claim =
            events::claim_statement(db, &self.ids, claimable(caller), now_ms, stale_before)?;
        let mut stmts = vec![claim];
        stmts.extend(destination_statements(db, &self.urls, self.with_drains)?);
        Ok(stmts)
    }

    /// Reads the riders' results (in the order of [`Self::statements`]).
    pub fn read(&self, results: &[Rows], component: Component) -> ReadAhead {
        let leased = match results.first() {
            Some(r) => events::read_claim(r),
            None => Err(missing()),
        };
        let rest = results.get(1..).ok_or_else(missing);
        ReadAhead {
            leased,
            destinations: read_destinations(rest, self.urls.len(), component),
        }
    }
}
