//! Phase 2: call the destination of each leased delivery, behind its
//! breaker and within its rate, or park it. The destinations of a batch
//! run concurrently, each in waves (`super::destination_run`), after the
//! claim's one read of their breakers and drains and one reservation of
//! the rated ones' starts (`super::rate`).

use super::call::{body_of, Attempt, Call, Ctx};
use super::claim::Destinations;
use super::destination_run::{self, Destination};
use super::hand_on::{self, mark_sent, Beside};
use super::item::DeliveryItem;
use super::rate;
use super::scheduler::Scheduler;
use crate::join::join_all;
use hookrelay_core::deliver::DeliveryConfig;
use hookrelay_core::metrics::Component;
use hookrelay_core::parking::Caller;
use hookrelay_core::support::vec_map::VecMap;
use std::cell::RefCell;
use worker::{D1Database, Env};

/// Calls the destination of every item, or parks it; the answer is in
/// item order.
pub(super) async fn deliver(
    (db, env): (&D1Database, &Env),
    items: &[DeliveryItem],
    stored: VecMap<String, String>,
    (cfg, budget_ms, claimed_at): (&DeliveryConfig, Option<i64>, i64),
    (component, caller): (Component, Caller),
    destinations: Destinations,
) -> Vec<Call> {
    let budget_ends = budget_ms.map(|b| crate::now_ms() + b);
    let mut ctx = Ctx {
        db,
        env,
        items,
        stored,
        cfg,
        component,
        caller,
        starts: Vec::new(),
        // The budget counts from the start of the batch's calls.
        scheduler: Scheduler::new(budget_ends),
        last_starts: std::cell::RefCell::new(VecMap::new()),
    };
    let (mut calls, mut groups) = by_destination(&ctx);
    let (starts, over) = rate::reserve(&ctx, &mut groups, &destinations).await;
    ctx.starts = starts;
    calls.extend(over);
    let ctx = ctx;
    let runs = groups.into_iter().map(|(name, indexes)| {
        let destination = Destination {
            name,
            indexes,
            drain: destinations.draining.get(name).copied(),
            stored: destinations
                .breakers
                .as_ref()
                .map(|b| b.get(name).copied().unwrap_or_default()),
        };
        destination_run::run(&ctx, destination)
    });
    let sent = RefCell::new(Vec::new());
    let watcher =
        budget_ends.map(|end| Box::pin(hand_on::at_budget_end(&ctx, (end, claimed_at), &sent)));
    let ran = Beside {
        main: Box::pin(join_all(runs)),
        side: watcher,
    };
    calls.extend(ran.await.into_iter().flatten());
    mark_sent(&mut calls, &sent.borrow());
    in_item_order(calls, ctx.items.len())
}

/// The calls in item order. Each item has one call, so they are placed by
/// index rather than sorted: a sort would link a stable-sort
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

/// The items grouped by destination, in arrival order; an item whose
/// claim-checked body could not be loaded fails without a call.
fn by_destination<'a>(ctx: &Ctx<'a>) -> (Vec<Call>, Vec<(&'a str, Vec<usize>)>) {
    let mut failed = Vec::new();
    let mut groups: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, item) in ctx.items.iter().enumerate() {
        if let Err(f) = body_of(&item.event, &ctx.stored) {
            failed.push((i, Attempt::Called(Err(f))));
            continue;
        }
        let name = item.destination.as_str();
        match groups.iter_mut().find(|(n, _)| *n == name) {
            Some((_, ix)) => ix.push(i),
            None => groups.push((name, vec![i])),
        }
    }
    (failed, groups)
}
