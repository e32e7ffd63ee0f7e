//! Which ingested events need a downstream call.

use crate::state::{DeliveryStatus, DownstreamResult};

/// The downstream side right after ingest: an event already delivered is
/// never called again; anything else has not been forwarded yet.
pub fn after_ingest(status: DeliveryStatus) -> DownstreamResult {
    match status {
        DeliveryStatus::Delivered => DownstreamResult::AlreadyDelivered,
        _ => DownstreamResult::NotForwarded,
    }
}

/// Whether an ingested event needs a call: its source forwards and it has
/// not been delivered.
pub fn needs_call(after_ingest: DownstreamResult, forwards: bool) -> bool {
    forwards && after_ingest == DownstreamResult::NotForwarded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_undelivered_events_of_forwarding_sources_are_called() {
        use DeliveryStatus::*;
        let table = [
            (Pending, true, true),
            (Failed, true, true),
            (Delivering, true, true),
            (None, true, true),
            (Delivered, true, false),
            (Pending, false, false),
            (Delivered, false, false),
        ];
        for (status, forwards, want) in table {
            assert_eq!(
                needs_call(after_ingest(status), forwards),
                want,
                "{status:?} {forwards}"
            );
        }
    }
}
