//! Keeping a shared async fn's body out of its callers.
//!
//! rustc marks the `poll` of every async fn `inlinehint`, and
//! `#[inline(never)]` on an async fn only reaches the function that builds
//! the future (rust-lang/rust#106765). So LLVM copies a shared async fn
//! into the state machine of every caller: measured with twiggy, the
//! delivery call and the breaker admission were in the wasm twice, once
//! inside the consumer's pipeline and once inside the drain step.
//! Awaiting such a future through [`outlined`] puts its body in one
//! never-inlined `poll`, shared by every caller that awaits the same
//! future type.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A future whose `poll` is never inlined (see the module comment). The
/// box keeps it safe to pin and keeps the caller's state to one pointer.
pub struct Outlined<F>(Pin<Box<F>>);

impl<F: Future> Future for Outlined<F> {
    type Output = F::Output;

    #[inline(never)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.get_mut().0.as_mut().poll(cx)
    }
}

/// `f`, to be awaited without being inlined into the caller.
pub fn outlined<F: Future>(f: F) -> Outlined<F> {
    Outlined(Box::pin(f))
}
