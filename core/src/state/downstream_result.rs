//! What one pass of the pipeline did about the downstream call.

use super::named_states;

named_states! {
    /// The downstream side of one processed event, as a replay answers it
    /// (`"delivery": …`).
    pub enum DownstreamResult ("downstream result") {
        /// The source has no downstream, or ingest failed first.
        NotForwarded = "not_forwarded",
        /// It was delivered before; no call was made.
        AlreadyDelivered = "already_delivered",
        /// Another isolate holds the delivery lease; no call was made.
        InFlightElsewhere = "in_flight_elsewhere",
        /// Delivered now.
        Delivered = "delivered",
        /// Not delivered now (the failure is in the outcome).
        Failed = "failed",
        /// No call was made: the event was parked until its destination recovers.
        Parked = "parked",
    }
}
