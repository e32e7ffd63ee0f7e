//! Which ingested events need a downstream call.

use crate::parking::Caller;
use crate::state::{DeliveryStatus, DownstreamResult};

/// The downstream side right after ingest: an event already delivered is
/// never called again; anything else has not been forwarded yet.
pub fn after_ingest(status: DeliveryStatus) -> DownstreamResult {
    match status {
        DeliveryStatus::Delivered => DownstreamResult::AlreadyDelivered,
        _ => DownstreamResult::NotForwarded,
    }
}

/// Whether an ingested event needs a call now.
///
/// Its source must forward and it must not be delivered. Beyond that, the
/// consumer calls only events still waiting for their first success: a
/// provider's duplicate of an event the downstream refused for good
/// (`failed`) causes no second call, and one of a `parked` event waits for
/// its drain. A replay is an operator's explicit ask, so it calls a failed
/// or parked event too; a drain calls the parked events it leases.
pub fn needs_call(status: DeliveryStatus, forwards: bool, caller: Caller) -> bool {
    use DeliveryStatus::*;
    if !forwards || status == Delivered {
        return false;
    }
    !matches!((caller, status), (Caller::Consumer, Failed | Parked))
}

#[cfg(test)]
mod tests {
    use super::*;
    use DeliveryStatus::*;

    #[test]
    fn who_calls_which_event() {
        let c = Caller::Consumer;
        let r = Caller::Replay;
        let table = [
            (Pending, true, c, true),
            (None, true, c, true),
            (Delivering, true, c, true),
            (Failed, true, c, false),
            (Parked, true, c, false),
            (Failed, true, r, true),
            (Parked, true, r, true),
            (Pending, true, r, true),
            (Delivered, true, c, false),
            (Delivered, true, r, false),
            (Pending, false, c, false),
            (Failed, false, r, false),
        ];
        for (status, forwards, caller, want) in table {
            assert_eq!(
                needs_call(status, forwards, caller),
                want,
                "{status:?} {forwards} {caller:?}"
            );
        }
    }

    #[test]
    fn only_a_delivered_event_reads_as_already_delivered() {
        for s in DeliveryStatus::ALL {
            let want = if *s == Delivered {
                DownstreamResult::AlreadyDelivered
            } else {
                DownstreamResult::NotForwarded
            };
            assert_eq!(after_ingest(*s), want);
        }
    }
}
