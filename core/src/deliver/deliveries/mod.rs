//! Deliveries: one per (event, matching route), each with its own state
//! (DESIGN §3 "Fan-out"). This module holds the vocabulary both workers
//! share: what a delivery's [`DeliveryState`] allows each caller, how an event's one
//! `delivery_status` sums up its deliveries ([`summary`]), the message on
//! the `deliveries` queue ([`message`]), and how an event from before
//! deliveries existed is read ([`legacy`]).

pub mod legacy;
pub mod message;
pub mod summary;

pub use crate::state::DeliveryState;

use crate::parking::Caller;
use crate::state::error_code::Failure;

impl DeliveryState {
    /// The states from which `caller` takes a delivery's lease without
    /// waiting (a `delivering` one only once its lease went stale). The
    /// consumer calls only pending deliveries: a parked one waits for its
    /// drain, a delivered or dead-lettered one is done. A drain step takes
    /// the parked ones; a replay (an operator's ask) also a dead-lettered
    /// one, never a delivered one.
    pub fn claimable(caller: Caller) -> &'static [DeliveryState] {
        match caller {
            Caller::Consumer => &[DeliveryState::Pending],
            Caller::DrainStep => &[DeliveryState::Parked],
            Caller::Replay => &[
                DeliveryState::Pending,
                DeliveryState::Parked,
                DeliveryState::DeadLettered,
            ],
        }
    }

    /// A delivery's state after a failed call by `caller`: the consumer's
    /// stays `pending` for its retry (a poison one is marked
    /// `dead_lettered` once its hand-off is sent, so a failed send loses
    /// nothing); a replay's goes back to `dead_lettered` (its entry stays
    /// in the DLQ).
    pub fn after_failure(caller: Caller, _failure: &Failure) -> DeliveryState {
        if caller == Caller::Replay {
            DeliveryState::DeadLettered
        } else {
            DeliveryState::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::error_code::ErrorCode;

    #[test]
    fn each_caller_leases_only_what_it_may_call() {
        use DeliveryState::*;
        for caller in [Caller::Consumer, Caller::DrainStep, Caller::Replay] {
            let states = DeliveryState::claimable(caller);
            assert!(
                !states.contains(&Delivered),
                "{caller:?}: a delivered one is done"
            );
            assert!(
                !states.contains(&Delivering),
                "{caller:?}: only a stale lease"
            );
        }
        assert_eq!(DeliveryState::claimable(Caller::Consumer), &[Pending]);
        assert_eq!(DeliveryState::claimable(Caller::DrainStep), &[Parked]);
        let f = Failure::new(ErrorCode::Upstream4xx, "no");
        assert_eq!(DeliveryState::after_failure(Caller::Consumer, &f), Pending);
        assert_eq!(
            DeliveryState::after_failure(Caller::Replay, &f),
            DeadLettered
        );
    }
}
