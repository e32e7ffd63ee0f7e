//! Where one delivery stands (`deliveries.state`, DESIGN §3 "Fan-out"):
//! the state of one (event, destination). What each caller may do from a
//! state is `deliver::deliveries`; the event's summary of its deliveries is
//! [`super::DeliverySummary`].

use super::named_states;

named_states! {
    /// Where one delivery (one event to one destination) stands
    /// (`deliveries.state`).
    pub enum DeliveryState ("delivery state") {
        /// Waiting for its (next) call.
        Pending = "pending",
        /// An isolate holds its lease and is calling the destination.
        Delivering = "delivering",
        /// The destination answered 2xx; never called again for this event.
        Delivered = "delivered",
        /// Held in D1 while its destination is unwell or over its rate.
        Parked = "parked",
        /// Handed to `webhooks-dlq`: a poison answer, or its budget ran out.
        DeadLettered = "dead_lettered",
    }
}
