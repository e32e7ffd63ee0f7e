//! At the end of a batch's call budget, the calls that did not start are
//! handed on at once (DESIGN §3: "what has not started by then goes to the
//! `deliveries` queue at once"), while the started ones run on to their
//! own timeouts: their leases given back in one round trip, their messages
//! sent in one call. A hand-on that fails here is done again by the
//! recorder and the caller once the batch's calls settled.

use super::call::{Attempt, Call, Ctx};
use crate::db::{deliveries, error_message};
use crate::{log, now_ms, queue_send};
use hookrelay_core::deliver::deliveries::message::DeliveryMessage;
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Waits for the budget's end (`budget_ends_ms`), then hands on what did
/// not start; the items it handed on go to `sent`.
pub(super) async fn at_budget_end(
    ctx: &Ctx<'_>,
    (budget_ends_ms, claimed_at): (i64, i64),
    sent: &RefCell<Vec<usize>>,
) {
    crate::paced::sleep_until(budget_ends_ms).await;
    ctx.scheduler.end_budget();
    let items = ctx.scheduler.handed_on();
    if items.is_empty() {
        return;
    }
    let now = now_ms();
    let keys: Vec<(&str, &str)> = items
        .iter()
        .map(|&i| {
            (
                ctx.items[i].event.event_id.as_str(),
                ctx.items[i].destination.as_str(),
            )
        })
        .collect();
    let released = async {
        let stmts = keys
            .iter()
            .map(|&k| deliveries::release_statement(ctx.db, k, claimed_at, now))
            .collect::<worker::Result<Vec<_>>>()?;
        crate::db::batch(ctx.db, stmts).await?;
        let jsons: Vec<String> = items
            .iter()
            .filter_map(|&i| {
                let e = &ctx.items[i].event;
                let m = DeliveryMessage::new(
                    &e.event_id,
                    &e.idempotency_key,
                    &e.source,
                    &ctx.items[i].destination,
                    e.received_at_ms,
                );
                serde_json::to_string(&m).ok()
            })
            .collect();
        let queue = ctx.env.queue("DELIVERIES")?;
        queue_send::send_json_batch(&queue, &jsons).await
    };
    match released.await {
        Ok(()) => sent.borrow_mut().extend(items),
        Err(e) => log::warn(
            ctx.component,
            "hand_on_deferred",
            log::fields! {"count": keys.len(), "err": error_message(&e), "next": "handed on once the batch's calls settle"},
        ),
    }
}

/// The items handed on at the budget's end need nothing more.
pub(super) fn mark_sent(calls: &mut [Call], sent: &[usize]) {
    for (i, attempt) in calls.iter_mut() {
        if matches!(attempt, Attempt::HandedOn) && sent.contains(i) {
            *attempt = Attempt::SentOn;
        }
    }
}

/// `main`, with `side` polled beside it until `main` finishes (then `side`
/// is dropped, whatever it was doing).
pub(super) struct Beside<A: Future, B: Future> {
    pub main: Pin<Box<A>>,
    pub side: Option<Pin<Box<B>>>,
}

impl<A: Future, B: Future> Future for Beside<A, B> {
    type Output = A::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<A::Output> {
        let this = self.get_mut();
        if let Poll::Ready(v) = this.main.as_mut().poll(cx) {
            return Poll::Ready(v);
        }
        if let Some(side) = this.side.as_mut() {
            if side.as_mut().poll(cx).is_ready() {
                this.side = None;
            }
        }
        Poll::Pending
    }
}
