//! The summary on an event of where its deliveries stand
//! (`events.delivery_status`): one value per event, summed up from its
//! deliveries' own [`super::DeliveryState`] by `deliver::deliveries::summary`.

use super::named_states;

named_states! {
    /// The summary of one ingested event's deliveries.
    pub enum DeliverySummary ("delivery status") {
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

    #[test]
    fn a_lease_is_stale_after_the_timeout_plus_the_margin() {
        assert_eq!(lease_stale_before(100_000, 10_000), 60_000);
        assert_eq!(lease_stale_before(0, 100), -30_100);
    }
}
