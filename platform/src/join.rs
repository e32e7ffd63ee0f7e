//! Awaiting many futures side by side, in a small fraction of the wasm of
//! `futures_util::future::join_all`.
//!
//! `join_all` carries two strategies in every instantiation: a boxed slice
//! of `MaybeDone` for up to 30 futures and a `FuturesOrdered` (with its
//! task arena, wakers and ready queue) above that. Each future type gets
//! both, and the relay had three. A batch here holds at most 100
//! messages, so polling every pending future on each wake is cheap, and
//! that is all [`join_all`] does.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The future of [`join_all`].
pub struct JoinAll<F: Future> {
    /// The futures still running; `None` once one has finished.
    pending: Vec<Option<Pin<Box<F>>>>,
    /// Each future's output, at its index, once it has finished.
    done: Vec<Option<F::Output>>,
}

// Nothing in it is ever pinned in place: the futures sit in their own
// boxes and the outputs are plain values, so moving it is sound.
impl<F: Future> Unpin for JoinAll<F> {}

impl<F: Future> Future for JoinAll<F> {
    type Output = Vec<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let mut running = false;
        for (slot, out) in this.pending.iter_mut().zip(this.done.iter_mut()) {
            if let Some(f) = slot {
                match f.as_mut().poll(cx) {
                    Poll::Ready(v) => {
                        *out = Some(v);
                        *slot = None;
                    }
                    Poll::Pending => running = true,
                }
            }
        }
        if running {
            return Poll::Pending;
        }
        // Every slot is filled once none is running.
        Poll::Ready(this.done.drain(..).flatten().collect())
    }
}

/// Runs every future of `futures` concurrently; their outputs, in the
/// order the futures came in.
pub fn join_all<I>(futures: I) -> JoinAll<I::Item>
where
    I: IntoIterator,
    I::Item: Future,
{
    let pending: Vec<_> = futures.into_iter().map(|f| Some(Box::pin(f))).collect();
    let done = pending.iter().map(|_| None).collect();
    JoinAll { pending, done }
}
