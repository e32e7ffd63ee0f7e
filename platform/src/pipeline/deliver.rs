//! Phase 3: call the downstream of each leased event, behind its breaker,
//! or park it. The destinations of a batch run concurrently, each in waves
//! (`super::destination_run`), after one read of their breakers and drains.

use super::ahead::{destination_statements, read_destinations, with_drains, Destinations};
use super::call::{body_of, no_signing_key, Attempt, Call, Ctx};
use super::destination_run::{self, Destination};
use super::Item;
use crate::db::payloads;
use crate::join::join_all;
use hookrelay_core::config::DeliveryConfig;
use hookrelay_core::metrics::Component;
use hookrelay_core::parking::Caller;
use hookrelay_core::queued_event::EventBody;
use worker::D1Database;

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
        destination_run::run(&ctx, destination)
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
