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
