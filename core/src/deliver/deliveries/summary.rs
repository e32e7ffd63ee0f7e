//! An event's one `delivery_status`, summed up from its deliveries
//! (DESIGN §3): `none` (the source has no route), `filtered` (no route
//! matched), `pending` (any delivery pending or in flight), `parked` (any
//! parked, none pending), `failed` (any dead-lettered, none pending or
//! parked), else `delivered`. The rule lives here once; [`SUMMARY_SQL`] is
//! the same rule for a statement that recomputes `events.delivery_status`
//! in the batch that changes a delivery, and a test holds the two together.

use crate::state::{DeliveryState, DeliverySummary as Summary};

/// Sums up an event's deliveries. `routed` says whether the source had
/// any route when the event was ingested (false: `none`); an event with
/// routes and no delivery was `filtered`.
pub fn summary(routed: bool, states: &[DeliveryState]) -> Summary {
    let any = |s: DeliveryState| states.contains(&s);
    if !routed {
        Summary::None
    } else if states.is_empty() {
        Summary::Filtered
    } else if any(DeliveryState::Pending) || any(DeliveryState::Delivering) {
        Summary::Pending
    } else if any(DeliveryState::Parked) {
        Summary::Parked
    } else if any(DeliveryState::DeadLettered) {
        Summary::Failed
    } else {
        Summary::Delivered
    }
}

/// The same rule as [`summary`] in SQL, for one event whose id is bound as
/// `?1`, when it has at least one delivery row (an event without rows keeps
/// the `none` or `filtered` written at ingest). Used as
/// `UPDATE events SET delivery_status = (<SUMMARY_SQL>) WHERE event_id = ?1`
/// in the same batch as the delivery's own write, so the summary never
/// costs a round trip of its own.
pub const SUMMARY_SQL: &str = "SELECT CASE \
     WHEN SUM(state IN ('pending','delivering')) > 0 THEN 'pending' \
     WHEN SUM(state = 'parked') > 0 THEN 'parked' \
     WHEN SUM(state = 'dead_lettered') > 0 THEN 'failed' \
     ELSE 'delivered' END FROM deliveries WHERE event_id = ?1";

#[cfg(test)]
mod tests {
    use super::*;
    use DeliveryState::*;

    #[test]
    fn the_summary_follows_design_section_3() {
        let table: &[(bool, &[DeliveryState], Summary)] = &[
            (false, &[], Summary::None),
            (true, &[], Summary::Filtered),
            (true, &[Delivered], Summary::Delivered),
            (true, &[Delivered, Pending], Summary::Pending),
            (true, &[Delivering, Parked, DeadLettered], Summary::Pending),
            (true, &[Parked, DeadLettered, Delivered], Summary::Parked),
            (true, &[DeadLettered, Delivered], Summary::Failed),
            (true, &[Delivered, Delivered, Delivered], Summary::Delivered),
        ];
        for (routed, states, want) in table {
            assert_eq!(summary(*routed, states), *want, "{states:?}");
        }
    }

    #[test]
    fn the_sql_names_every_state_the_rule_reads() {
        for s in [Pending, Delivering, Parked, DeadLettered] {
            assert!(SUMMARY_SQL.contains(&format!("'{}'", s.as_str())), "{s:?}");
        }
        for s in [
            Summary::Pending,
            Summary::Parked,
            Summary::Failed,
            Summary::Delivered,
        ] {
            assert!(SUMMARY_SQL.contains(&format!("'{}'", s.as_str())), "{s:?}");
        }
    }
}
