//! Where an event's downstream delivery stands (`events.delivery_status`).

use super::named_states;
use crate::error_code::{Failure, FailureClass};

named_states! {
    /// The delivery status of one ingested event.
    pub enum DeliveryStatus ("delivery status") {
        /// The source has no downstream.
        None = "none",
        /// Waiting for a (next) delivery attempt.
        Pending = "pending",
        /// An isolate holds the delivery lease and is calling the downstream.
        Delivering = "delivering",
        /// The downstream answered 2xx; never delivered again.
        Delivered = "delivered",
        /// The downstream refused it for good (poison), or it was dead-lettered.
        Failed = "failed",
        /// Held in D1 while the destination's breaker is open; drained later.
        Parked = "parked",
        /// The source has routes and none matched (DESIGN §3): no delivery.
        Filtered = "filtered",
    }
}

impl DeliveryStatus {
    /// The status a freshly ingested event starts with.
    pub fn initial(forwards: bool) -> DeliveryStatus {
        if forwards {
            DeliveryStatus::Pending
        } else {
            DeliveryStatus::None
        }
    }

    /// The status an event starts with once routed (DESIGN §3).
    pub fn routed(routed: &crate::config::Routed) -> DeliveryStatus {
        use crate::config::Routed;
        match routed {
            Routed::NoRoutes => DeliveryStatus::None,
            Routed::Routed { matched, .. } if matched.is_empty() => DeliveryStatus::Filtered,
            Routed::Routed { .. } => DeliveryStatus::Pending,
        }
    }

    /// The status after a failed delivery attempt: a poison answer will
    /// never succeed, so the event is `failed`; anything else may pass and
    /// stays `pending` for the retry.
    pub fn after_failure(failure: &Failure) -> DeliveryStatus {
        match failure.class() {
            FailureClass::Poison => DeliveryStatus::Failed,
            FailureClass::Transient | FailureClass::Unknown => DeliveryStatus::Pending,
        }
    }

    /// Statuses from which a delivery lease may be taken without waiting for
    /// another holder's lease to expire.
    pub const LEASABLE: [DeliveryStatus; 4] = [
        DeliveryStatus::None,
        DeliveryStatus::Pending,
        DeliveryStatus::Failed,
        DeliveryStatus::Parked,
    ];
}

/// How long a `delivering` lease is honoured: the call's own timeout plus a
/// margin for the isolate to write the result. A lease older than this was
/// left by an isolate that died, and is taken over.
pub const LEASE_MARGIN_MS: i64 = 30_000;

/// The claim time before which a `delivering` lease counts as abandoned.
pub fn lease_stale_before(now_ms: i64, timeout_ms: u64) -> i64 {
    now_ms - (timeout_ms as i64 + LEASE_MARGIN_MS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error_code::ErrorCode;

    #[test]
    fn the_initial_status_depends_on_whether_the_source_forwards() {
        assert_eq!(DeliveryStatus::initial(true), DeliveryStatus::Pending);
        assert_eq!(DeliveryStatus::initial(false), DeliveryStatus::None);
    }

    #[test]
    fn a_failed_attempt_leaves_failed_only_for_poison() {
        let table = [
            (ErrorCode::Upstream4xx, DeliveryStatus::Failed),
            (ErrorCode::AuthExpired, DeliveryStatus::Failed),
            (ErrorCode::Upstream5xx, DeliveryStatus::Pending),
            (ErrorCode::Timeout, DeliveryStatus::Pending),
            (ErrorCode::RateLimited, DeliveryStatus::Pending),
            (ErrorCode::CircuitOpen, DeliveryStatus::Pending),
            (ErrorCode::Unknown, DeliveryStatus::Pending),
        ];
        for (code, want) in table {
            let f = Failure::new(code, "x");
            assert_eq!(DeliveryStatus::after_failure(&f), want, "{code:?}");
        }
    }

    #[test]
    fn a_lease_is_stale_after_the_timeout_plus_the_margin() {
        assert_eq!(lease_stale_before(100_000, 10_000), 60_000);
        assert_eq!(lease_stale_before(0, 100), -30_100);
    }
}
