//! What a caller does when another isolate took the half-open probe first
//! (its compare-and-set claim lost): reload and ask again, until it has
//! lost [`PROBE_CLAIM_ATTEMPTS`] claims in a row; then someone else is
//! plainly probing right now, and the call is refused as an open breaker
//! refuses it, until one cooldown from now.

use super::{BreakerConfig, BreakerState};
use crate::state::error_code::ErrorCode;
use crate::UnixMillis;

/// Probe claims a caller may lose in a row before it gives up.
pub const PROBE_CLAIM_ATTEMPTS: u32 = 5;

/// What to do after losing a probe claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LostClaim {
    /// Reload the stored state and ask the breaker again.
    Reload,
    /// Give up: refuse the call(s) as an open breaker would.
    GiveUp {
        /// When a probe may next be admitted.
        retry_at_ms: UnixMillis,
        /// The failure that opened the breaker, when the state knows it.
        cause: Option<ErrorCode>,
    },
}

/// After losing the `lost`-th claim in a row (1 for the first), with the
/// breaker last seen in `state`.
pub fn after_lost_claim(
    lost: u32,
    state: BreakerState,
    now_ms: UnixMillis,
    cfg: &BreakerConfig,
) -> LostClaim {
    if lost < PROBE_CLAIM_ATTEMPTS {
        return LostClaim::Reload;
    }
    LostClaim::GiveUp {
        retry_at_ms: now_ms + cfg.cooldown_ms,
        cause: state.cause(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_claim_reloads_until_the_fifth_then_gives_up_for_a_cooldown() {
        let cfg = BreakerConfig::default();
        let open = BreakerState::Open {
            opened_at_ms: 0,
            cause: Some(ErrorCode::Upstream5xx),
        };
        let probing = BreakerState::HalfOpen {
            successes: 0,
            probe_started_at_ms: Some(5),
            cause: None,
        };
        let give_up = |cause| LostClaim::GiveUp {
            retry_at_ms: 1_000 + cfg.cooldown_ms,
            cause,
        };
        let table = [
            (1, open, LostClaim::Reload),
            (4, open, LostClaim::Reload),
            (5, open, give_up(Some(ErrorCode::Upstream5xx))),
            (6, open, give_up(Some(ErrorCode::Upstream5xx))),
            (5, probing, give_up(None)),
            (1, probing, LostClaim::Reload),
        ];
        for (lost, state, want) in table {
            assert_eq!(
                after_lost_claim(lost, state, 1_000, &cfg),
                want,
                "{lost} {state:?}"
            );
        }
    }
}
