//! The call scheduler's glue: one per invocation's delivery batch, shared
//! by every destination's run. The rule (how many calls open, whose turn,
//! the budget) is `hookrelay_core::deliver::call_scheduler`; this only
//! parks each call's future until the rule says it starts, or that it is
//! handed on, and wakes the waiting ones when a slot frees or the budget
//! ends. A call's timeout starts inside the call, so it never counts while
//! the call waits here.

use crate::now_ms;
use hookrelay_core::deliver::call_scheduler::{Ask, CallScheduler, Turn};
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// The scheduler of one batch.
pub struct Scheduler {
    state: RefCell<CallScheduler>,
    waiting: RefCell<Vec<Waker>>,
    budget_ends_ms: Option<i64>,
}

/// A call's place: it may start, or it is handed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// Start now; call [`Scheduler::done`] with the id once it settled.
    Start(usize),
    /// It will not start in this invocation.
    HandOn,
}

impl Scheduler {
    /// A scheduler whose waiting calls are handed on at `budget_ends_ms`.
    pub fn new(budget_ends_ms: Option<i64>) -> Scheduler {
        Scheduler {
            state: RefCell::new(CallScheduler::new(budget_ends_ms)),
            waiting: RefCell::new(Vec::new()),
            budget_ends_ms,
        }
    }

    /// Waits for the call's turn.
    pub async fn turn(&self, ask: Ask) -> Slot {
        let id = self.state.borrow_mut().ask(ask);
        let timer = self.budget_ends_ms.map(|end| {
            let ms = (end - now_ms()).max(0) as u64;
            Box::pin(worker::Delay::from(std::time::Duration::from_millis(ms)))
        });
        Wait {
            scheduler: self,
            id,
            timer,
            asked: false,
        }
        .await
    }

    /// The budget's end passed: every call still waiting is handed on now.
    pub fn end_budget(&self) {
        if self.state.borrow_mut().advance(now_ms()) {
            self.wake();
        }
    }

    /// The items of the calls handed on so far.
    pub fn handed_on(&self) -> Vec<usize> {
        self.state.borrow().handed_on()
    }

    /// The call `id` settled: its slot goes to the next one.
    pub fn done(&self, id: usize) {
        self.state.borrow_mut().done(id);
        self.wake();
    }

    fn wake(&self) {
        let wakers = std::mem::take(&mut *self.waiting.borrow_mut());
        for w in wakers {
            w.wake();
        }
    }
}

/// The future of one call's turn.
struct Wait<'a> {
    scheduler: &'a Scheduler,
    id: usize,
    timer: Option<Pin<Box<worker::Delay>>>,
    /// Whether it has yielded once since it asked: every call of the batch
    /// asks in the same pass before any is given a turn, so the turns are
    /// shared between destinations rather than handed out in asking order.
    asked: bool,
}

impl Future for Wait<'_> {
    type Output = Slot;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Slot> {
        let this = self.get_mut();
        if !this.asked {
            this.asked = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if let Some(t) = this.timer.as_mut() {
            // Polled so that the budget's end wakes this call.
            let _ = t.as_mut().poll(cx);
        }
        let changed = this.scheduler.state.borrow_mut().advance(now_ms());
        let turn = this.scheduler.state.borrow().turn(this.id);
        if changed {
            this.scheduler.wake();
        }
        match turn {
            Turn::Start => Poll::Ready(Slot::Start(this.id)),
            Turn::HandOn | Turn::Done => Poll::Ready(Slot::HandOn),
            Turn::Waiting => {
                this.scheduler.waiting.borrow_mut().push(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}
