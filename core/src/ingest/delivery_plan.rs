//! The downstream side of an event right after its ingest (which
//! deliveries then need a call is the deliveries' own state,
//! `crate::state::DeliveryState::claimable`).

use crate::state::{DeliverySummary, DownstreamResult};

/// The downstream side right after ingest: an event already delivered is
/// never called again; anything else has not been forwarded yet.
pub fn after_ingest(status: DeliverySummary) -> DownstreamResult {
    match status {
        DeliverySummary::Delivered => DownstreamResult::AlreadyDelivered,
        _ => DownstreamResult::NotForwarded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DeliverySummary::*;

    #[test]
    fn only_a_delivered_event_reads_as_already_delivered() {
        for s in DeliverySummary::ALL {
            let want = if *s == Delivered {
                DownstreamResult::AlreadyDelivered
            } else {
                DownstreamResult::NotForwarded
            };
            assert_eq!(after_ingest(*s), want);
        }
    }
}
