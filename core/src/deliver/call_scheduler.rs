//! The call scheduler of one invocation (DESIGN §3, "A slow destination
//! holds nobody"), as a pure state machine: which waiting call may start
//! now, and which must be handed on because the batch's call budget ran
//! out. The platform's glue (`hookrelay_platform::pipeline::scheduler`)
//! only parks each call's future until this says it may start.
//!
//! - At most [`MAX_OPEN_CALLS`] calls are open at once: the runtime keeps 6
//!   connections per invocation, of every kind, and one stays free for the
//!   batch's queue sends and R2 writes.
//! - The calls are shared out between destinations: a free slot goes to
//!   the waiting destination with the fewest calls open (then the one
//!   waiting longest), so a destination that answers in seconds, or hangs,
//!   holds at most its share while another has calls waiting.
//! - At most [`MAX_SERVICE_CALLS`] service-binding calls per invocation
//!   (the platform allows 32 Worker invocations per request) and about
//!   [`MAX_BODY_BYTES`] of bodies: past either, a call is handed on.
//! - With a budget (`FIRST_ATTEMPT_BUDGET`, from the start of the batch's
//!   calls), a call not started by its end is handed on (to the
//!   `deliveries` queue); one already started runs to its own timeout,
//!   which counts from its start, never while it waits.

use crate::support::env::{text, ConfigEnv, ConfigError};

/// Calls one invocation keeps open at once (6 connections, one kept free).
pub const MAX_OPEN_CALLS: usize = 5;

/// Service-binding calls per invocation (the platform allows 32 Worker
/// invocations per request; two stay for the relay's own).
pub const MAX_SERVICE_CALLS: usize = 30;

/// Bodies sent per invocation, about 32 MiB.
pub const MAX_BODY_BYTES: u64 = 32 * 1024 * 1024;

/// Default `FIRST_ATTEMPT_BUDGET`: 2 s from the start of the batch's calls.
pub const DEFAULT_FIRST_ATTEMPT_BUDGET_MS: i64 = 2_000;

/// The longest `FIRST_ATTEMPT_BUDGET` accepted: a `webhooks` batch's next
/// ingest waits for it plus one timeout.
pub const MAX_FIRST_ATTEMPT_BUDGET_MS: i64 = 30_000;

/// Reads `FIRST_ATTEMPT_BUDGET` (a duration such as `2s`; `0s` sends every
/// delivery's first attempt through the `deliveries` queue).
pub fn load_budget(env: &impl ConfigEnv) -> Result<i64, ConfigError> {
    let key = "FIRST_ATTEMPT_BUDGET";
    let Some(raw) = text(env, key) else {
        return Ok(DEFAULT_FIRST_ATTEMPT_BUDGET_MS);
    };
    // A duration is never zero elsewhere; here `0s` is a real choice.
    if raw.trim() == "0s" {
        return Ok(0);
    }
    let ms =
        crate::support::duration::parse_duration_ms(&raw).map_err(|p| ConfigError::new(key, p))?;
    if ms > MAX_FIRST_ATTEMPT_BUDGET_MS {
        return Err(ConfigError::new(
            key,
            format!("'{raw}' is longer than {}s: the next batch's ingest would wait that long behind a slow destination", MAX_FIRST_ATTEMPT_BUDGET_MS / 1000),
        ));
    }
    Ok(ms)
}

/// The `deliveries` consumer's call budget: `FIRST_ATTEMPT_BUDGET`, never
/// less than its default (with `0s`, every first attempt comes through the
/// queue, and there it must start). A budget bounds how long a call may
/// wait for its turn, and so the batch's leases
/// (`crate::deliver::lease::Holder::batch`).
pub fn retry_budget_ms(first_attempt_budget_ms: i64) -> i64 {
    first_attempt_budget_ms.max(DEFAULT_FIRST_ATTEMPT_BUDGET_MS)
}

/// One call waiting to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ask {
    /// Its destination (an index the caller chose).
    pub destination: usize,
    /// What it delivers (an index the caller chose: its item in the batch).
    pub item: usize,
    /// Whether it goes through a service binding.
    pub service: bool,
    /// Its body's size.
    pub body_bytes: u64,
}

/// What happened to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// Still waiting.
    Waiting,
    /// It may start now.
    Start,
    /// It will not start in this invocation: hand it on.
    HandOn,
    /// It started and settled.
    Done,
}

/// The scheduler's state for one invocation.
#[derive(Debug, Clone)]
pub struct CallScheduler {
    asks: Vec<Ask>,
    turns: Vec<Turn>,
    open: Vec<usize>,
    service_calls: usize,
    body_bytes: u64,
    /// When calls that have not started are handed on (none: never).
    budget_ends_ms: Option<i64>,
}

impl CallScheduler {
    /// A scheduler whose waiting calls are handed on at `budget_ends_ms`.
    pub fn new(budget_ends_ms: Option<i64>) -> CallScheduler {
        CallScheduler {
            asks: Vec::new(),
            turns: Vec::new(),
            open: Vec::new(),
            service_calls: 0,
            body_bytes: 0,
            budget_ends_ms,
        }
    }

    /// Queues a call; its id.
    pub fn ask(&mut self, ask: Ask) -> usize {
        if self.open.len() <= ask.destination {
            self.open.resize(ask.destination + 1, 0);
        }
        self.asks.push(ask);
        self.turns.push(Turn::Waiting);
        self.asks.len() - 1
    }

    /// Where call `id` stands.
    pub fn turn(&self, id: usize) -> Turn {
        self.turns[id]
    }

    /// The items of the calls handed on so far.
    pub fn handed_on(&self) -> Vec<usize> {
        self.turns
            .iter()
            .zip(&self.asks)
            .filter(|(t, _)| **t == Turn::HandOn)
            .map(|(_, a)| a.item)
            .collect()
    }

    /// Calls open now.
    pub fn open_calls(&self) -> usize {
        self.open.iter().sum()
    }

    /// Call `id` settled: its slot is free.
    pub fn done(&mut self, id: usize) {
        if self.turns[id] == Turn::Start {
            self.open[self.asks[id].destination] -= 1;
        }
        self.turns[id] = Turn::Done;
    }

    /// Decides at `now_ms` which waiting calls start and which are handed
    /// on; answers whether anything changed (the glue then wakes them).
    pub fn advance(&mut self, now_ms: i64) -> bool {
        let mut changed = false;
        if self.budget_ends_ms.is_some_and(|end| now_ms >= end) {
            for t in self.turns.iter_mut().filter(|t| **t == Turn::Waiting) {
                *t = Turn::HandOn;
                changed = true;
            }
            return changed;
        }
        while self.open_calls() < MAX_OPEN_CALLS {
            let Some(id) = self.next_waiting() else { break };
            let ask = self.asks[id];
            let over_service = ask.service && self.service_calls >= MAX_SERVICE_CALLS;
            let over_bytes =
                self.body_bytes > 0 && self.body_bytes + ask.body_bytes > MAX_BODY_BYTES;
            if over_service || over_bytes {
                self.turns[id] = Turn::HandOn;
            } else {
                self.turns[id] = Turn::Start;
                self.open[ask.destination] += 1;
                self.service_calls += usize::from(ask.service);
                self.body_bytes += ask.body_bytes;
            }
            changed = true;
        }
        changed
    }

    /// The waiting call of the destination with the fewest calls open,
    /// then the one waiting longest.
    fn next_waiting(&self) -> Option<usize> {
        self.turns
            .iter()
            .enumerate()
            .filter(|(_, t)| **t == Turn::Waiting)
            .min_by_key(|(id, _)| (self.open[self.asks[*id].destination], *id))
            .map(|(id, _)| id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(destination: usize) -> Ask {
        Ask {
            destination,
            item: 0,
            service: false,
            body_bytes: 10,
        }
    }

    fn started(s: &CallScheduler, ids: &[usize]) -> Vec<usize> {
        ids.iter()
            .copied()
            .filter(|&i| s.turn(i) == Turn::Start)
            .collect()
    }

    #[test]
    fn at_most_five_calls_are_open_and_a_settled_one_frees_its_slot() {
        let mut s = CallScheduler::new(None);
        let ids: Vec<usize> = (0..40).map(|_| s.ask(ask(0))).collect();
        assert!(s.advance(0));
        assert_eq!(started(&s, &ids), vec![0, 1, 2, 3, 4]);
        s.done(2);
        assert!(s.advance(10));
        assert_eq!(started(&s, &ids), vec![0, 1, 3, 4, 5]);
        assert_eq!(s.open_calls(), MAX_OPEN_CALLS);
        assert!(!s.advance(20), "nothing changes while every slot is held");
    }

    #[test]
    fn a_hanging_destination_holds_at_most_its_share_while_another_waits() {
        let mut s = CallScheduler::new(None);
        // Destination 0 (hangs) asked first for 10 calls, then 1 (fast) for 10.
        let slow: Vec<usize> = (0..10).map(|_| s.ask(ask(0))).collect();
        let fast: Vec<usize> = (0..10).map(|_| s.ask(ask(1))).collect();
        s.advance(0);
        assert_eq!(started(&s, &slow).len(), 3);
        assert_eq!(started(&s, &fast).len(), 2);
        // The fast one's calls settle one by one; the slow one's never do.
        for round in 0..8 {
            let open_fast = started(&s, &fast);
            s.done(open_fast[0]);
            s.advance(round);
        }
        assert_eq!(
            started(&s, &slow).len(),
            3,
            "the hanging destination never took a freed slot"
        );
        assert_eq!(fast.iter().filter(|&&i| s.turn(i) == Turn::Done).count(), 8);
    }

    #[test]
    fn the_budget_hands_on_what_has_not_started_and_leaves_started_calls_alone() {
        let mut s = CallScheduler::new(Some(2_000));
        let ids: Vec<usize> = (0..8).map(|i| s.ask(ask(i % 2))).collect();
        s.advance(0);
        assert!(s.advance(2_000));
        let turns: Vec<Turn> = ids.iter().map(|&i| s.turn(i)).collect();
        assert_eq!(turns.iter().filter(|t| **t == Turn::Start).count(), 5);
        assert_eq!(turns.iter().filter(|t| **t == Turn::HandOn).count(), 3);
    }

    #[test]
    fn first_attempt_budget_reads_a_bounded_duration() {
        use serde_json::json;
        use std::collections::BTreeMap;
        let env = |v: Option<&str>| {
            let mut e: BTreeMap<String, serde_json::Value> = BTreeMap::new();
            if let Some(v) = v {
                e.insert("FIRST_ATTEMPT_BUDGET".into(), json!(v));
            }
            e
        };
        let table = [
            (None, Ok(2_000)),
            (Some("0s"), Ok(0)),
            (Some("5s"), Ok(5_000)),
            (Some("31s"), Err(())),
            (Some("2"), Err(())),
        ];
        for (raw, want) in table {
            assert_eq!(load_budget(&env(raw)).map_err(|_| ()), want, "{raw:?}");
        }
    }

    #[test]
    fn service_calls_and_body_bytes_are_bounded_per_invocation() {
        let mut s = CallScheduler::new(None);
        let service = Ask {
            destination: 0,
            item: 0,
            service: true,
            body_bytes: 1,
        };
        let ids: Vec<usize> = (0..40).map(|_| s.ask(service)).collect();
        let mut rounds = 0;
        while ids
            .iter()
            .any(|&i| matches!(s.turn(i), Turn::Waiting | Turn::Start))
            && rounds < 100
        {
            s.advance(0);
            for &i in &ids {
                if s.turn(i) == Turn::Start {
                    s.done(i);
                }
            }
            rounds += 1;
        }
        let handed = ids.iter().filter(|&&i| s.turn(i) == Turn::HandOn).count();
        assert_eq!(handed, 40 - MAX_SERVICE_CALLS);
        let mut b = CallScheduler::new(None);
        let big = Ask {
            destination: 0,
            item: 7,
            service: false,
            body_bytes: 20 * 1024 * 1024,
        };
        let (x, y) = (b.ask(big), b.ask(big));
        b.advance(0);
        assert_eq!((b.turn(x), b.turn(y)), (Turn::Start, Turn::HandOn));
        assert_eq!(b.handed_on(), vec![7]);
    }
}
