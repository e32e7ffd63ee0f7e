//! Carries out [`hookrelay_core::deliver::pacing`]: calls started at the times a
//! [`Pacer`] hands out, at most one batch (the concurrency) in flight.
//! Replay-all and job steps run their batches through here, so a rate means
//! the same in both (DESIGN.md §4).

use crate::join::join_all;
use crate::now_ms;
use hookrelay_core::deliver::pacing::Pacer;
use std::cell::RefCell;
use std::future::Future;

/// Waits until `at_ms` (unix ms); at once if that has passed.
pub async fn sleep_until(at_ms: i64) {
    let wait = at_ms - now_ms();
    if wait > 0 {
        worker::Delay::from(std::time::Duration::from_millis(wait as u64)).await;
    }
}

/// Runs `call` on every item of `batch` side by side, each one starting no
/// earlier than the start `pacer` reserves for it; the outputs, in order.
/// The batch is the concurrency cap: the caller passes at most that many.
pub async fn run_batch<'a, T, F, Fut>(
    pacer: &RefCell<Pacer>,
    batch: &'a [T],
    call: F,
) -> Vec<Fut::Output>
where
    F: Fn(&'a T) -> Fut,
    Fut: Future,
{
    let paced = batch.iter().map(|item| {
        // Reserved in order when each future is first polled (join_all
        // polls them in order), so starts keep the batch's order.
        let started = call(item);
        async move {
            let at = pacer.borrow_mut().reserve(now_ms());
            sleep_until(at).await;
            started.await
        }
    });
    join_all(paced).await
}
