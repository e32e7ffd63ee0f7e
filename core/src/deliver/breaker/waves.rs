//! One batch's calls to one destination, in concurrent waves behind one
//! read of its breaker.
//!
//! The consumer reads each destination's breaker once per batch, runs the
//! calls in waves, folds every result into that state in call order, and
//! writes it back once. The rules of the sequential breaker still hold:
//! - no call starts while the folded state is OPEN;
//! - HALF_OPEN admits one probe, alone in its wave, and its result decides
//!   what the rest of the batch does;
//! - consecutive failures are counted in call order.
//!
//! How wide a wave is: a batch first tries a destination with a wave no
//! wider than the failures still left before the threshold, so a
//! destination that is already failing gets exactly `failure_threshold`
//! failing calls before it opens, as it would one call at a time. Once a
//! wave of `failure_threshold` calls (not a lone probe) came back
//! entirely healthy, the rest of the batch goes out
//! together (up to [`MAX_WAVE`]); the first failure narrows the waves
//! again. So a healthy destination costs two waves per batch, and only a
//! destination that fails in the middle of a wide wave can see more than
//! the threshold of failing calls, at most one wave's worth.

use super::{admit, record, Admission, BreakerConfig, BreakerState};
use crate::state::error_code::ErrorCode;
use crate::UnixMillis;
use std::collections::VecDeque;

/// The most calls one wave makes to one destination: a queue batch holds
/// at most 100 messages. The runtime itself keeps only six connections of
/// one invocation open at once and queues the rest.
pub const MAX_WAVE: usize = 100;

/// What to do next for one destination's remaining calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wave {
    /// Make these calls now, concurrently (indexes in call order).
    Call(Vec<usize>),
    /// Claim the single probe by writing `next` (compare-and-set), then
    /// make this one call alone. If the claim is lost, reload the state
    /// ([`DestinationWaves::reloaded`]) and ask again.
    Probe {
        /// The call that probes.
        index: usize,
        /// The state that claims the probe.
        next: BreakerState,
    },
    /// Make none of these calls: the breaker refuses them.
    Refuse {
        /// The calls refused, in order.
        indexes: Vec<usize>,
        /// When a probe may next be admitted.
        retry_at_ms: UnixMillis,
        /// The failure that opened the breaker, when known.
        cause: Option<ErrorCode>,
    },
    /// Every call has been planned.
    Done,
}

/// One destination's calls in a batch and its breaker as folded so far.
#[derive(Debug, Clone)]
pub struct DestinationWaves {
    state: BreakerState,
    stored: BreakerState,
    pending: VecDeque<usize>,
    unwritten: Vec<Option<ErrorCode>>,
    /// The last wave was at least the threshold wide and came back
    /// entirely healthy.
    proven: bool,
}

impl DestinationWaves {
    /// Starts from the stored `state`, with `indexes` to call in order.
    pub fn new(state: BreakerState, indexes: Vec<usize>) -> Self {
        DestinationWaves {
            state,
            stored: state,
            pending: indexes.into(),
            unwritten: Vec::new(),
            proven: false,
        }
    }

    /// The next wave at `now_ms`.
    pub fn next(&mut self, now_ms: UnixMillis, cfg: &BreakerConfig) -> Wave {
        if self.pending.is_empty() {
            return Wave::Done;
        }
        match admit(self.state, now_ms, cfg) {
            Admission::Allow => {
                let width = wave_width(self.state, self.proven, cfg);
                let n = width.min(self.pending.len());
                Wave::Call(self.pending.drain(..n).collect())
            }
            Admission::Probe { next } => Wave::Probe {
                index: self.pending.pop_front().unwrap_or_default(),
                next,
            },
            Admission::Reject { retry_at_ms, cause } => Wave::Refuse {
                indexes: self.pending.drain(..).collect(),
                retry_at_ms,
                cause,
            },
        }
    }

    /// The probe claim was written: the state is `next`, stored as such.
    pub fn probe_claimed(&mut self, next: BreakerState) {
        self.state = next;
        self.stored = next;
    }

    /// The probe claim was lost, or the stored state moved: continue from
    /// `stored` with the results not yet written folded on top, and give
    /// `index` (the probe that was not made) back to the front.
    pub fn reloaded(
        &mut self,
        stored: BreakerState,
        index: Option<usize>,
        now_ms: UnixMillis,
        cfg: &BreakerConfig,
    ) {
        self.stored = stored;
        self.state = self
            .unwritten
            .iter()
            .fold(stored, |s, r| record(s, *r, now_ms, cfg));
        if let Some(i) = index {
            self.pending.push_front(i);
        }
    }

    /// Folds one wave's results, in call order: `None` for a healthy
    /// answer, else the code that says the destination is unwell.
    pub fn fold(&mut self, results: &[Option<ErrorCode>], now_ms: UnixMillis, cfg: &BreakerConfig) {
        for r in results {
            self.state = record(self.state, *r, now_ms, cfg);
            self.unwritten.push(*r);
        }
        // A lone probe is not proof: only a wave as wide as the threshold.
        let wide_enough =
            results.len() >= usize::try_from(cfg.failure_threshold).unwrap_or(usize::MAX);
        self.proven = wide_enough && results.iter().all(Option::is_none);
    }

    /// The state to write at the end of the batch, if it changed.
    pub fn to_write(&self) -> Option<BreakerState> {
        (self.state != self.stored).then_some(self.state)
    }

    /// Takes every call not planned yet (the batch gives up on them).
    pub fn take_rest(&mut self) -> Vec<usize> {
        self.pending.drain(..).collect()
    }

    /// The state as folded so far.
    pub fn state(&self) -> BreakerState {
        self.state
    }

    /// The final state was written.
    pub fn written(&mut self) {
        self.stored = self.state;
        self.unwritten.clear();
    }
}

/// How many calls may go out together from a state that allows calls:
/// all of them after a healthy wave, else the failures left before the
/// threshold.
fn wave_width(state: BreakerState, proven: bool, cfg: &BreakerConfig) -> usize {
    let left = match state {
        BreakerState::Closed { failures: 0 } if proven => return MAX_WAVE,
        BreakerState::Closed { failures } => cfg.failure_threshold.saturating_sub(failures),
        _ => 1,
    };
    usize::try_from(left).unwrap_or(MAX_WAVE).clamp(1, MAX_WAVE)
}

#[cfg(test)]
mod tests;
