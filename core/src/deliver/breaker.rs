//! The per-destination circuit breaker, as a pure state machine.
//!
//! CLOSED counts consecutive failures; at the threshold it opens. OPEN
//! refuses every call until the cooldown has passed, then admits one probe
//! and becomes HALF_OPEN. In HALF_OPEN a successful probe counts towards
//! the success threshold (then CLOSED); a failed probe reopens it. A probe
//! that never reports back (its isolate died) is forgotten after another
//! cooldown, so the breaker cannot stay stuck half-open.
//!
//! Time comes in as `now_ms`; the platform glue persists the state in D1
//! and applies these transitions with compare-and-set, so every isolate
//! sees one breaker per destination.

mod probe_claim;
mod stored;
pub mod waves;

pub use probe_claim::{after_lost_claim, LostClaim, PROBE_CLAIM_ATTEMPTS};
pub use stored::decode_state;

use crate::state::error_code::{ErrorCode, Failure};
use crate::state::BreakerStateName;
use crate::UnixMillis;
use serde::{Deserialize, Serialize};

/// Breaker settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerConfig {
    /// Consecutive failures that open a closed breaker.
    pub failure_threshold: u32,
    /// Consecutive successful probes that close a half-open breaker.
    pub success_threshold: u32,
    /// How long an open breaker refuses calls before admitting a probe.
    pub cooldown_ms: i64,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        BreakerConfig {
            failure_threshold: 5,
            success_threshold: 1,
            cooldown_ms: 60_000,
        }
    }
}

/// What a delivery does while its destination's breaker is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BreakerOpenAction {
    /// Ack the message and park the event in D1 until the destination
    /// recovers; a drain then delivers it (see `crate::parking`). It costs
    /// no retry budget and no DLQ entry.
    #[default]
    Park,
    /// Take the retry path with `CIRCUIT_OPEN` (transient); a breaker that
    /// stays open ends in the DLQ through `max_retries`.
    Retry,
    /// Hand the event to `webhooks-dlq` at once with `CIRCUIT_OPEN`, as the
    /// seed service does.
    DeadLetter,
}

impl BreakerOpenAction {
    /// Parses `BREAKER_OPEN_ACTION`: `park`, `retry` or `dead-letter`.
    pub fn parse(raw: &str) -> Option<BreakerOpenAction> {
        match raw.trim() {
            "park" => Some(BreakerOpenAction::Park),
            "retry" => Some(BreakerOpenAction::Retry),
            "dead-letter" => Some(BreakerOpenAction::DeadLetter),
            _ => None,
        }
    }
}

/// The breaker's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BreakerState {
    /// Calls flow; failures are counted.
    Closed {
        /// Consecutive failures so far.
        failures: u32,
    },
    /// Calls are refused until the cooldown passes.
    Open {
        /// When it opened.
        opened_at_ms: UnixMillis,
        /// The failure that opened it, kept so an event that never reached
        /// the destination can name the destination's real problem.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cause: Option<ErrorCode>,
    },
    /// One probe at a time is admitted.
    HalfOpen {
        /// Successful probes so far.
        successes: u32,
        /// When the current probe was admitted, if one is in flight.
        probe_started_at_ms: Option<UnixMillis>,
        /// The failure that opened it, kept while it probes so that events
        /// refused meanwhile still name the destination's real problem.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cause: Option<ErrorCode>,
    },
}

impl Default for BreakerState {
    fn default() -> Self {
        BreakerState::Closed { failures: 0 }
    }
}

impl BreakerState {
    /// The failure that opened it, while it is open or probing and the
    /// cause is known.
    pub fn cause(&self) -> Option<ErrorCode> {
        match self {
            BreakerState::Open { cause, .. } | BreakerState::HalfOpen { cause, .. } => *cause,
            _ => None,
        }
    }

    /// Which state it is, as `breakers.state_name` stores it.
    pub fn state_name(&self) -> BreakerStateName {
        match self {
            BreakerState::Closed { .. } => BreakerStateName::Closed,
            BreakerState::Open { .. } => BreakerStateName::Open,
            BreakerState::HalfOpen { .. } => BreakerStateName::HalfOpen,
        }
    }

    /// `CLOSED`, `OPEN` or `HALF_OPEN` ([`Self::state_name`] as text).
    pub fn name(&self) -> &'static str {
        self.state_name().as_str()
    }
}

/// Whether a call may go out now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Call normally.
    Allow,
    /// Call as the single probe; persist `next` first so no other isolate probes too.
    Probe {
        /// The state that claims the probe.
        next: BreakerState,
    },
    /// Do not call: the breaker is open (or a probe is in flight).
    Reject {
        /// When a probe may next be admitted.
        retry_at_ms: UnixMillis,
        /// The failure that opened the breaker, when known.
        cause: Option<ErrorCode>,
    },
}

/// Decides whether a call may go out at `now_ms`.
pub fn admit(state: BreakerState, now_ms: UnixMillis, cfg: &BreakerConfig) -> Admission {
    match state {
        BreakerState::Closed { .. } => Admission::Allow,
        BreakerState::Open {
            opened_at_ms,
            cause,
        } => {
            let ready_at = opened_at_ms.saturating_add(cfg.cooldown_ms);
            if now_ms >= ready_at {
                Admission::Probe {
                    next: BreakerState::HalfOpen {
                        successes: 0,
                        probe_started_at_ms: Some(now_ms),
                        cause,
                    },
                }
            } else {
                Admission::Reject {
                    retry_at_ms: ready_at,
                    cause,
                }
            }
        }
        BreakerState::HalfOpen {
            successes,
            probe_started_at_ms,
            cause,
        } => match probe_started_at_ms {
            Some(started) if now_ms < started.saturating_add(cfg.cooldown_ms) => {
                Admission::Reject {
                    retry_at_ms: started.saturating_add(cfg.cooldown_ms),
                    cause,
                }
            }
            _ => Admission::Probe {
                next: BreakerState::HalfOpen {
                    successes,
                    probe_started_at_ms: Some(now_ms),
                    cause,
                },
            },
        },
    }
}

/// The state after a call that went out finished. `unhealthy` is the code
/// of a failure that says the destination is unwell (5xx, 429, timeouts,
/// network errors); `None` for a success or a 4xx it answered deliberately.
pub fn record(
    state: BreakerState,
    unhealthy: Option<ErrorCode>,
    now_ms: UnixMillis,
    cfg: &BreakerConfig,
) -> BreakerState {
    let healthy = unhealthy.is_none();
    match (state, healthy) {
        (BreakerState::Closed { .. }, true) => BreakerState::Closed { failures: 0 },
        (BreakerState::Closed { failures }, false) => {
            let failures = failures.saturating_add(1);
            if failures >= cfg.failure_threshold || unhealthy.is_some_and(opens_at_once) {
                BreakerState::Open {
                    opened_at_ms: now_ms,
                    cause: unhealthy,
                }
            } else {
                BreakerState::Closed { failures }
            }
        }
        (
            BreakerState::HalfOpen {
                successes, cause, ..
            },
            true,
        ) => {
            let successes = successes.saturating_add(1);
            if successes >= cfg.success_threshold {
                BreakerState::Closed { failures: 0 }
            } else {
                BreakerState::HalfOpen {
                    successes,
                    probe_started_at_ms: None,
                    cause,
                }
            }
        }
        (BreakerState::HalfOpen { .. }, false) => BreakerState::Open {
            opened_at_ms: now_ms,
            cause: unhealthy,
        },
        // A call admitted while closed may finish after another isolate
        // opened the breaker; it does not change an open breaker.
        (open @ BreakerState::Open { .. }, _) => open,
    }
}

/// Whether a failure with `code` opens a closed breaker at once, whatever
/// the threshold: a refused credential (`AUTH_EXPIRED`, counted only for a
/// destination with `auth`) or a redirect (`UPSTREAM_REDIRECT`, a wrong
/// URL) would be met by every further call alike, until it is fixed
/// (`crate::deliver::response::parks_destination`).
pub fn opens_at_once(code: ErrorCode) -> bool {
    matches!(code, ErrorCode::AuthExpired | ErrorCode::UpstreamRedirect)
}

/// The state that re-opens a breaker at once, whatever it was: a drain
/// step that meets an unhealthy answer stops pushing the backlog at a
/// destination that just failed again, without waiting for the failure
/// threshold. A `Retry-After` longer than the cooldown moves the opening
/// forward, so the next probe is due after `max(cooldown, Retry-After)`.
pub fn force_open(
    cause: ErrorCode,
    retry_after_s: Option<u32>,
    now_ms: UnixMillis,
    cfg: &BreakerConfig,
) -> BreakerState {
    let wait_ms = i64::from(retry_after_s.unwrap_or(0)) * 1000;
    BreakerState::Open {
        opened_at_ms: now_ms + (wait_ms - cfg.cooldown_ms).max(0),
        cause: Some(cause),
    }
}

/// When an open breaker admits its next probe (`None` unless it is open).
pub fn next_probe_at(state: BreakerState, cfg: &BreakerConfig) -> Option<UnixMillis> {
    match state {
        BreakerState::Open { opened_at_ms, .. } => {
            Some(opened_at_ms.saturating_add(cfg.cooldown_ms))
        }
        _ => None,
    }
}

/// What to do when the breaker's stored state cannot be read (D1 down, a
/// row this version cannot parse): allow the call. A breaker protects the
/// destination from load; failing closed here would turn a D1 hiccup into
/// a full delivery outage, while the call itself still has its timeout.
pub const ADMISSION_WHEN_UNREADABLE: Admission = Admission::Allow;

/// The state a batch's calls start from when the breaker cannot be read:
/// closed, so they are admitted, for the reason above. Its final write
/// (compare-and-set from version 0) then meets the real row and folds the
/// batch's results onto it.
pub const STATE_WHEN_UNREADABLE: BreakerState = BreakerState::Closed { failures: 0 };

/// The failure of a call that was refused because the breaker is open: no
/// network call was made, and the next probe is due at `retry_at_ms`.
pub fn circuit_open_failure(
    destination_label: &str,
    retry_at_ms: UnixMillis,
    now_ms: UnixMillis,
    cause: Option<ErrorCode>,
) -> Failure {
    let wait_s = ((retry_at_ms - now_ms).max(0) as u64).div_ceil(1000);
    let mut f = Failure::new(
        ErrorCode::CircuitOpen,
        format!(
            "circuit open for {destination_label}; no call made; next probe in about {wait_s}s"
        ),
    );
    f.cause = cause;
    f
}

#[cfg(test)]
mod tests;
