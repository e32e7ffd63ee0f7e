//! Parking: what a delivery does while its destination is unwell, and the
//! rules that bring parked events back out (DESIGN §3, "Parking and drain").
//!
//! - [`decide`]: call, park, or refuse one delivery ([`when_rejected`] once
//!   the breaker refused it).
//! - [`drains_to_ensure`]: the drains a batch's parks call for.
//! - [`expiry`]: when a parked event has waited too long.
//! - [`DrainMessage`]: the message on `hookrelay-control` that advances one
//!   destination's drain by one step (pacing is in [`drain_plan`]).
pub mod drain_plan;
pub mod expiry;
mod message;
mod park_batch;
mod park_cause;
pub mod settings;

pub use message::{DrainMessage, DRAIN_KIND};
pub use park_batch::{drains_to_ensure, DrainToEnsure};
pub use park_cause::ParkCause;

use crate::deliver::breaker::{circuit_open_failure, Admission, BreakerOpenAction};
use crate::state::error_code::{ErrorCode, Failure};
use crate::UnixMillis;

/// Who is asking for a delivery; only the consumer's new events park.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// The `webhooks` consumer, delivering an event as it arrives.
    Consumer,
    /// A drain step delivering a parked event.
    DrainStep,
    /// An operator's replay: it is an explicit ask to try now, so it never
    /// parks; a refusal fails the replay and the entry stays pending.
    Replay,
}

/// What one delivery does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallDecision {
    /// Make the network call.
    Call,
    /// Make no call: park the event in D1 and ack its message.
    Park {
        /// The failure that opened the breaker, kept as the event's root cause.
        cause: Option<ErrorCode>,
        /// When the breaker admits its next probe (`None`: it is not open,
        /// the event queues behind a drain that is already running).
        probe_at_ms: Option<UnixMillis>,
    },
    /// Make no call: fail the attempt with `CIRCUIT_OPEN`.
    Refuse(Failure),
}

/// Whether the event parks behind a drain without asking the breaker: while
/// a destination still has parked events a new event queues behind them,
/// even if the breaker is closed, so the drain keeps arrival order and its
/// rate. Asking the breaker first would claim the half-open probe for a
/// call that is never made.
pub fn parks_behind_drain(drain_active: bool, action: BreakerOpenAction, caller: Caller) -> bool {
    drain_active && action == BreakerOpenAction::Park && caller == Caller::Consumer
}

/// Decides one delivery from the breaker's admission (`Allow` and `Probe`
/// let a call out), whether the destination has a drain, the open action
/// and who asks. `destination_label` and `now_ms` word a refusal.
pub fn decide(
    admission: Admission,
    drain_active: bool,
    action: BreakerOpenAction,
    caller: Caller,
    destination_label: &str,
    now_ms: UnixMillis,
) -> CallDecision {
    if parks_behind_drain(drain_active, action, caller) {
        return CallDecision::Park {
            cause: None,
            probe_at_ms: None,
        };
    }
    let Admission::Reject { retry_at_ms, cause } = admission else {
        return CallDecision::Call;
    };
    let rejected = Rejected { retry_at_ms, cause };
    match when_rejected(rejected, action, caller, destination_label, now_ms) {
        NoCall::Park { cause, probe_at_ms } => CallDecision::Park { cause, probe_at_ms },
        NoCall::Refuse(f) => CallDecision::Refuse(f),
    }
}

/// The breaker refused a call (an open breaker, or a probe claim that kept
/// losing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rejected {
    /// When a probe may next be admitted.
    pub retry_at_ms: UnixMillis,
    /// The failure that opened the breaker, when known.
    pub cause: Option<ErrorCode>,
}

/// What a delivery the breaker refused does: [`CallDecision`] without its
/// `Call`, which a refusal never is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoCall {
    /// Park the event in D1 until the breaker admits its next probe.
    Park {
        /// The failure that opened the breaker, kept as the event's root cause.
        cause: Option<ErrorCode>,
        /// When the breaker admits its next probe.
        probe_at_ms: Option<UnixMillis>,
    },
    /// Fail the attempt with `CIRCUIT_OPEN`.
    Refuse(Failure),
}

/// Decides one delivery the breaker refused: the consumer parks when
/// parking is on; anyone else fails with `CIRCUIT_OPEN`.
/// `destination_label` and `now_ms` word the refusal.
pub fn when_rejected(
    Rejected { retry_at_ms, cause }: Rejected,
    action: BreakerOpenAction,
    caller: Caller,
    destination_label: &str,
    now_ms: UnixMillis,
) -> NoCall {
    if action == BreakerOpenAction::Park && caller == Caller::Consumer {
        return NoCall::Park {
            cause,
            probe_at_ms: Some(retry_at_ms),
        };
    }
    NoCall::Refuse(circuit_open_failure(
        destination_label,
        retry_at_ms,
        now_ms,
        cause,
    ))
}

/// A call failed in a way every other call to its destination would too
/// (`cause`, from `crate::deliver::response::parks_destination`: a refused
/// credential or a redirect), and that call opened the breaker, which
/// probes again at `probe_at_ms`. The parking consumer parks the event
/// (cause `auth` or `redirect`), so it spends no retry budget and makes no
/// DLQ entry, and drains once the secret or the URL is fixed; anyone else
/// keeps the failure (`None`): a replay reports it, and with another
/// `BREAKER_OPEN_ACTION` it dead-letters as before.
pub fn after_destination_refused(
    cause: ErrorCode,
    action: BreakerOpenAction,
    caller: Caller,
    probe_at_ms: UnixMillis,
) -> Option<NoCall> {
    (action == BreakerOpenAction::Park && caller == Caller::Consumer).then_some(NoCall::Park {
        cause: Some(cause),
        probe_at_ms: Some(probe_at_ms),
    })
}

/// Whole seconds from `now_ms` until `at_ms` (0 if it has passed), rounded
/// up so a delayed message never arrives before it is due.
pub fn delay_s_until(at_ms: UnixMillis, now_ms: UnixMillis) -> u32 {
    let ms = (at_ms - now_ms).max(0) as u64;
    u32::try_from(ms.div_ceil(1000)).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deliver::breaker::BreakerState;
    use BreakerOpenAction::{DeadLetter, Park, Retry};
    use Caller::{Consumer, DrainStep, Replay};

    const REJECT: Admission = Admission::Reject {
        retry_at_ms: 61_000,
        cause: Some(ErrorCode::Upstream5xx),
    };
    const PROBE: Admission = Admission::Probe {
        next: BreakerState::HalfOpen {
            successes: 0,
            probe_started_at_ms: Some(1_000),
            cause: None,
        },
    };

    #[derive(Debug, PartialEq)]
    enum Want {
        Call,
        ParkUntil(Option<UnixMillis>),
        Refuse,
    }

    #[test]
    fn each_combination_calls_parks_or_refuses() {
        let table = [
            // Breaker lets it out, no drain: everyone calls.
            (Admission::Allow, false, Park, Consumer, Want::Call),
            (PROBE, false, Park, Consumer, Want::Call),
            (Admission::Allow, false, Retry, Consumer, Want::Call),
            // Open, no drain yet: the consumer parks until the probe.
            (REJECT, false, Park, Consumer, Want::ParkUntil(Some(61_000))),
            (REJECT, false, Retry, Consumer, Want::Refuse),
            (REJECT, false, DeadLetter, Consumer, Want::Refuse),
            // A drain is running: a new event queues behind it, even closed.
            (
                Admission::Allow,
                true,
                Park,
                Consumer,
                Want::ParkUntil(None),
            ),
            (REJECT, true, Park, Consumer, Want::ParkUntil(None)),
            (PROBE, true, Park, Consumer, Want::ParkUntil(None)),
            // ... unless parking is off.
            (Admission::Allow, true, Retry, Consumer, Want::Call),
            (REJECT, true, Retry, Consumer, Want::Refuse),
            // The drain step itself is the one that calls or stops.
            (Admission::Allow, true, Park, DrainStep, Want::Call),
            (PROBE, true, Park, DrainStep, Want::Call),
            (REJECT, true, Park, DrainStep, Want::Refuse),
            // A replay never parks.
            (REJECT, false, Park, Replay, Want::Refuse),
            (Admission::Allow, true, Park, Replay, Want::Call),
        ];
        for (admission, drain, action, caller, want) in table {
            let got = match decide(admission, drain, action, caller, "https://x", 1_000) {
                CallDecision::Call => Want::Call,
                CallDecision::Park { probe_at_ms, cause } => {
                    if probe_at_ms.is_some() {
                        assert_eq!(cause, Some(ErrorCode::Upstream5xx), "the cause is kept");
                    }
                    Want::ParkUntil(probe_at_ms)
                }
                CallDecision::Refuse(f) => {
                    assert_eq!(f.code, ErrorCode::CircuitOpen);
                    assert_eq!(f.cause, Some(ErrorCode::Upstream5xx));
                    Want::Refuse
                }
            };
            assert_eq!(
                got, want,
                "{admission:?} drain={drain} {action:?} {caller:?}"
            );
        }
    }

    #[test]
    fn a_rejected_call_parks_only_for_the_parking_consumer_else_fails_circuit_open() {
        let rejected = Rejected {
            retry_at_ms: 61_000,
            cause: Some(ErrorCode::Upstream5xx),
        };
        let park = NoCall::Park {
            cause: Some(ErrorCode::Upstream5xx),
            probe_at_ms: Some(61_000),
        };
        let table = [
            (Park, Consumer, Some(&park)),
            (Retry, Consumer, None),
            (DeadLetter, Consumer, None),
            (Park, DrainStep, None),
            (Park, Replay, None),
            (Retry, Replay, None),
        ];
        for (action, caller, want) in table {
            let got = when_rejected(rejected, action, caller, "https://x", 1_000);
            match (want, &got) {
                (Some(park), got) => assert_eq!(got, park, "{action:?} {caller:?}"),
                (None, NoCall::Refuse(f)) => {
                    assert_eq!(f.code, ErrorCode::CircuitOpen, "{action:?} {caller:?}");
                    assert_eq!(f.cause, Some(ErrorCode::Upstream5xx));
                }
                (None, got) => panic!("{action:?} {caller:?}: {got:?}"),
            }
        }
    }

    #[test]
    fn only_the_consumer_parks_behind_a_drain_without_asking_the_breaker() {
        assert!(parks_behind_drain(true, Park, Consumer));
        assert!(!parks_behind_drain(false, Park, Consumer));
        assert!(!parks_behind_drain(true, Retry, Consumer));
        assert!(!parks_behind_drain(true, Park, DrainStep));
        assert!(!parks_behind_drain(true, Park, Replay));
    }

    #[test]
    fn a_refused_credential_or_a_redirect_parks_only_the_parking_consumers_event() {
        for code in [ErrorCode::AuthExpired, ErrorCode::UpstreamRedirect] {
            let park = NoCall::Park {
                cause: Some(code),
                probe_at_ms: Some(61_000),
            };
            let table = [
                (Park, Consumer, Some(&park)),
                (Retry, Consumer, None),
                (DeadLetter, Consumer, None),
                (Park, Replay, None),
                (Park, DrainStep, None),
            ];
            for (action, caller, want) in table {
                let got = after_destination_refused(code, action, caller, 61_000);
                assert_eq!(got.as_ref(), want, "{code} {action:?} {caller:?}");
            }
        }
    }

    #[test]
    fn a_delay_rounds_up_to_whole_seconds() {
        let table = [
            (61_000, 1_000, 60),
            (1_001, 0, 2),
            (0, 5_000, 0),
            (5_000, 5_000, 0),
        ];
        for (at, now, want) in table {
            assert_eq!(delay_s_until(at, now), want, "{at} {now}");
        }
    }
}
