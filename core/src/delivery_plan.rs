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

/// The statuses the consumer's claim leases at once: those it calls
/// ([`needs_call`]) that no isolate holds. `failed` and `parked` are left
/// out, so the claim can run in the ingest's own transaction, before
/// anyone has read the row's status, and still never lease an event the
/// consumer must not call (a duplicate of a refused or parked event).
pub const CONSUMER_CLAIMABLE: [DeliveryStatus; 2] = [DeliveryStatus::None, DeliveryStatus::Pending];

/// The statuses from which `caller`'s claim takes the delivery lease
/// without waiting. A `delivering` row is never in the list: it is leased
/// only once its lease went stale (`crate::state::lease_stale_before`).
pub fn claimable(caller: Caller) -> &'static [DeliveryStatus] {
    match caller {
        Caller::Consumer => &CONSUMER_CLAIMABLE,
        Caller::DrainStep | Caller::Replay => &DeliveryStatus::LEASABLE,
    }
}

/// Whether an event may need a call, known before ingest reads its row:
/// its source forwards. The claim then filters on the row's status.
pub fn may_need_call(forwards: bool) -> bool {
    forwards
}

/// Which listings hold a lease: per id of `listed` (in order), whether it
/// is in `held` (the ids the claim leased). One lease per event: an id
/// listed twice (a duplicate in the same batch) is held by its first
/// listing only. Also answers how many held ids no listing took, which
/// the caller reports (their leases expire on their own).
pub fn lease_holders<S: AsRef<str>>(
    listed: &[&str],
    held: impl IntoIterator<Item = S>,
) -> (Vec<bool>, usize) {
    let mut held: Vec<S> = held.into_iter().collect();
    let holds = listed
        .iter()
        .map(|id| match held.iter().position(|h| h.as_ref() == *id) {
            Some(at) => {
                held.swap_remove(at);
                true
            }
            None => false,
        })
        .collect();
    (holds, held.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use DeliveryStatus::*;

    #[test]
    fn which_statuses_each_caller_claims() {
        let table: [(Caller, &[DeliveryStatus]); 3] = [
            (Caller::Consumer, &[None, Pending]),
            (Caller::Replay, &[None, Pending, Failed, Parked]),
            (Caller::DrainStep, &[None, Pending, Failed, Parked]),
        ];
        for (caller, want) in table {
            assert_eq!(claimable(caller), want, "{caller:?}");
        }
    }

    /// The claim leases exactly what the caller would call and no one
    /// holds: so running it before the ingest's status is read leases the
    /// same events as running it after.
    #[test]
    fn the_claimable_statuses_are_the_leasable_ones_the_caller_calls() {
        for caller in [Caller::Consumer, Caller::Replay, Caller::DrainStep] {
            for s in DeliveryStatus::ALL {
                let want = DeliveryStatus::LEASABLE.contains(s) && needs_call(*s, true, caller);
                assert_eq!(claimable(caller).contains(s), want, "{caller:?} {s:?}");
            }
            assert!(!claimable(caller).contains(&Delivering));
            assert!(!claimable(caller).contains(&Delivered));
        }
    }

    #[test]
    fn every_event_that_needs_a_call_may_need_one_before_ingest() {
        assert!(may_need_call(true));
        assert!(!may_need_call(false));
        for forwards in [true, false] {
            for s in DeliveryStatus::ALL {
                for caller in [Caller::Consumer, Caller::Replay, Caller::DrainStep] {
                    if needs_call(*s, forwards, caller) {
                        assert!(may_need_call(forwards), "{s:?} {caller:?}");
                    }
                }
            }
        }
    }

    /// Listed, held, who holds, strays.
    type LeaseCase<'a> = (&'a [&'a str], &'a [&'a str], &'a [bool], usize);

    #[test]
    fn the_first_listing_of_an_event_holds_its_lease() {
        let table: [LeaseCase; 5] = [
            (&["a", "b", "c"], &["c", "a"], &[true, false, true], 0),
            (&["a", "a", "b"], &["a"], &[true, false, false], 0),
            (&["a"], &[], &[false], 0),
            (&[], &["a"], &[], 1),
            (&["a", "b"], &["b", "z"], &[false, true], 1),
        ];
        for (listed, held, want, strays) in table {
            let got = lease_holders(listed, held.iter().copied());
            assert_eq!(got, (want.to_vec(), strays), "{listed:?} {held:?}");
        }
    }

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
