//! The name of a breaker's state, as `breakers.state_name` and the JSON
//! in `breakers.state` (its `"state"` tag) store it.

use super::named_states;

named_states! {
    /// Closed, open or half-open (`crate::deliver::breaker::BreakerState` holds the rest).
    pub enum BreakerStateName ("breaker state") {
        /// Calls flow; failures are counted.
        Closed = "CLOSED",
        /// Calls are refused until the cooldown passes.
        Open = "OPEN",
        /// One probe at a time is admitted.
        HalfOpen = "HALF_OPEN",
    }
}
