//! Phase 3: call the downstream of each leased event, behind its breaker,
//! or park it. The destinations of a batch run concurrently, each in waves
//! (`super::waves`), after one read of their breakers and drains.

use super::ahead::{destination_statements, read_destinations, with_drains, Destinations};
use super::waves::{self, Destination};
use super::Item;
use crate::breaker_store::{admit_call, record_call};
use crate::db::{error_message, payloads};
use crate::join::join_all;
use crate::{downstream, log, now_ms};
use hookrelay_core::breaker::{Admission, ADMISSION_WHEN_UNREADABLE};
use hookrelay_core::config::DeliveryConfig;
use hookrelay_core::downstream_request::signed_headers;
use hookrelay_core::downstream_response::breaker_cause;
use hookrelay_core::error_code::{ErrorCode, Failure};
use hookrelay_core::metrics::Component;
use hookrelay_core::parking::Caller;
use hookrelay_core::queued_event::{EventBody, QueuedEvent};
use hookrelay_core::redact::destination_label;
use hookrelay_core::signature::SigningKey;
use hookrelay_core::vec_map::VecMap;
use worker::D1Database;

/// What one leased event came to.
#[derive(Debug, Clone)]
pub enum Attempt {
    /// A call was made (or could not be), with its result.
    Called(Result<(), Failure>),
    /// No call: the event is to be parked for `destination`.
    Parked {
        /// The destination URL.
        destination: String,
        /// The failure that opened the breaker, when known.
        cause: Option<ErrorCode>,
        /// When the breaker admits its next probe, when it is open.
        probe_at_ms: Option<i64>,
    },
}

/// One finished item: its index and what it came to.
pub type Call = (usize, Attempt);

/// What every destination's run of one batch shares.
pub(super) struct Ctx<'a> {
    pub db: &'a D1Database,
    pub items: &'a [Item<'a>],
    pub stored: VecMap<String, String>,
    pub cfg: &'a DeliveryConfig,
    pub key: &'a SigningKey,
    pub component: Component,
    pub caller: Caller,
}

/// Calls the downstream of every leased item, or parks it; the answer is
/// in item order. `destinations` is what the ingest batch read of them
/// (`super::ahead`); without it they are read here, in one round trip.
pub(super) async fn deliver(
    db: &D1Database,
    items: &[Item<'_>],
    leased: &[usize],
    cfg: &DeliveryConfig,
    (component, caller): (Component, Caller),
    destinations: Option<Destinations>,
) -> Vec<Call> {
    let Some(key) = cfg.signing_key.as_ref() else {
        let failed = || Attempt::Called(Err(no_signing_key()));
        return leased.iter().map(|&i| (i, failed())).collect();
    };
    let refs: Vec<&str> = leased
        .iter()
        .filter_map(|&i| match &items[i].event.body {
            EventBody::Stored { body_ref, .. } => Some(body_ref.as_str()),
            EventBody::Inline { .. } => None,
        })
        .collect();
    let stored = payloads::load_many(db, &refs).await.unwrap_or_default();
    let ctx = Ctx {
        db,
        items,
        stored,
        cfg,
        key,
        component,
        caller,
    };
    let (mut calls, groups) = by_destination(&ctx, leased);
    let urls: Vec<&str> = groups.iter().map(|(url, _)| *url).collect();
    let destinations = match destinations {
        Some(d) => d,
        None => read(&ctx, &urls).await,
    };
    let runs = groups.into_iter().map(|(url, indexes)| {
        let destination = Destination {
            url,
            indexes,
            drain: destinations.draining.get(url).copied(),
            stored: destinations
                .breakers
                .as_ref()
                .map(|b| b.get(url).copied().unwrap_or_default()),
        };
        waves::run(&ctx, destination)
    });
    calls.extend(join_all(runs).await.into_iter().flatten());
    in_item_order(calls, ctx.items.len())
}

/// The calls in item order. Each leased item has one call, so they are
/// placed by index rather than sorted: a sort would link a stable-sort
/// implementation for this one type (about 4 KB of wasm).
fn in_item_order(calls: Vec<Call>, items: usize) -> Vec<Call> {
    let mut slots: Vec<Option<Attempt>> = std::iter::repeat_with(|| None).take(items).collect();
    for (i, attempt) in calls {
        slots[i] = Some(attempt);
    }
    slots
        .into_iter()
        .enumerate()
        .filter_map(|(i, a)| a.map(|a| (i, a)))
        .collect()
}

/// The leased items grouped by destination, in arrival order; an item
/// whose claim-checked body could not be loaded fails without a call.
fn by_destination<'a>(ctx: &Ctx<'a>, leased: &[usize]) -> (Vec<Call>, Vec<(&'a str, Vec<usize>)>) {
    let mut failed = Vec::new();
    let mut groups: Vec<(&str, Vec<usize>)> = Vec::new();
    for &i in leased {
        let event = ctx.items[i].event;
        if let Err(f) = body_of(event, &ctx.stored) {
            failed.push((i, Attempt::Called(Err(f))));
            continue;
        }
        let url = ctx.cfg.downstreams[&event.source].as_str();
        match groups.iter_mut().find(|(u, _)| *u == url) {
            Some((_, ix)) => ix.push(i),
            None => groups.push((url, vec![i])),
        }
    }
    (failed, groups)
}

/// The drains and the stored breakers of `urls`, in one round trip
/// (`super::ahead::read_destinations` says what an unreadable one means).
async fn read(ctx: &Ctx<'_>, urls: &[&str]) -> Destinations {
    let with_drains = with_drains(ctx.cfg, ctx.caller);
    let results = match destination_statements(ctx.db, urls, with_drains) {
        Ok(stmts) => crate::db::batch(ctx.db, stmts).await,
        Err(e) => Err(e),
    };
    match results {
        Ok(r) => read_destinations(Ok(&r), urls.len(), ctx.component),
        Err(e) => read_destinations(Err(e), urls.len(), ctx.component),
    }
}

/// The body of `event`: inline, or from the claim-checked bodies loaded.
pub(crate) fn body_of<'a>(
    event: &'a QueuedEvent,
    stored: &'a VecMap<String, String>,
) -> Result<&'a str, Failure> {
    match &event.body {
        EventBody::Inline { body } => Ok(body.as_str()),
        EventBody::Stored { body_ref, .. } => {
            stored.get(body_ref).map(String::as_str).ok_or_else(|| {
                Failure::new(
                    ErrorCode::D1Unavailable,
                    "the claim-checked body could not be loaded from D1",
                )
            })
        }
    }
}

/// The breaker's admission for one call to `url` (a drain step), claiming
/// the probe when it is due; an unreadable breaker admits
/// (`ADMISSION_WHEN_UNREADABLE`).
pub(crate) async fn admission(
    db: &D1Database,
    component: Component,
    url: &str,
    cfg: &DeliveryConfig,
) -> Admission {
    match admit_call(db, component, url, now_ms(), &cfg.breaker).await {
        Ok(a) => a,
        Err(e) => {
            log::error(
                component,
                "breaker_unreadable",
                log::fields! {"destination": destination_label(url), "err": error_message(&e)},
            );
            ADMISSION_WHEN_UNREADABLE
        }
    }
}

/// The failure when no downstream signing key is configured.
pub(crate) fn no_signing_key() -> Failure {
    Failure::new(
        ErrorCode::Unknown,
        "DOWNSTREAM_SIGNING_SECRET is not configured",
    )
}

/// One signed call to `url`. The breaker is not touched: a batch folds
/// its calls into its breaker once (`super::waves`), a drain step through
/// [`call`].
pub(crate) async fn call_downstream(
    event: &QueuedEvent,
    body: &str,
    url: &str,
    key: &SigningKey,
    cfg: &DeliveryConfig,
) -> Result<(), Failure> {
    // The clock is read here, as the request is built: a paced replay or a
    // drain never sends a stale X-Timestamp.
    let sent_at = now_ms();
    let headers = signed_headers(
        &event.event_id,
        &event.idempotency_key,
        &event.source,
        key,
        sent_at.div_euclid(1000),
        body.as_bytes(),
    );
    downstream::post(url, &headers, body, cfg.timeout_ms, sent_at).await
}

/// One signed call to `url`, with its result recorded on the breaker.
pub(crate) async fn call(
    db: &D1Database,
    event: &QueuedEvent,
    body: &str,
    url: &str,
    key: &SigningKey,
    cfg: &DeliveryConfig,
    component: Component,
) -> Result<(), Failure> {
    let result = call_downstream(event, body, url, key, cfg).await;
    let cause = breaker_cause(&result);
    if let Err(e) = record_call(db, component, url, cause, now_ms(), &cfg.breaker).await {
        log::error(
            component,
            "breaker_unwritable",
            log::fields! {"destination": destination_label(url), "err": error_message(&e)},
        );
    }
    result
}
