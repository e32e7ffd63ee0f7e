//! One step in an event's delivery story (`event_steps.step`).

use super::named_states;

named_states! {
    /// A step of one event's delivery.
    pub enum EventStep ("event step") {
        /// A downstream call answered 2xx.
        Delivered = "delivered",
        /// A downstream call failed (the code says how).
        DeliveryFailed = "delivery_failed",
        /// Held while its destination's breaker was open.
        Parked = "parked",
        /// Delivered by a drain after its destination recovered.
        Drained = "drained",
        /// Dead-lettered from parking (too old, or refused while draining).
        DeadLettered = "dead_lettered",
    }
}
