//! Deliveries: one per (event, matching route), each with its own state
//! (DESIGN §3 "Fan-out"). This module holds the vocabulary both workers
//! share: a delivery's [`DeliveryState`], how an event's one
//! `delivery_status` sums up its deliveries ([`summary`]), the message on
//! the `deliveries` queue ([`message`]), and how an event from before
//! deliveries existed is read ([`legacy`]).

pub mod legacy;
pub mod message;
pub mod summary;

use crate::state::named_states;

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
