//! How an event ingested before deliveries existed is read: as one
//! delivery to the destination named after its source (a `downstream`
//! source's destination), in the state its own `events.delivery_status`
//! column says. Migration 0017 backfills nothing in SQL; the relay copies
//! such an event into a `deliveries` row the first time it touches it, and
//! readers (the listing, the story, the drain) use this mapping until then.

use crate::state::DeliveryState;

/// The one delivery of a pre-deliveries event, from its
/// `events.delivery_status`: `None` for `none` (the source forwarded
/// nowhere), else the destination (the source's name) and its state.
pub fn legacy_delivery(source: &str, delivery_status: &str) -> Option<(String, DeliveryState)> {
    let state = match delivery_status {
        "pending" => DeliveryState::Pending,
        "delivering" => DeliveryState::Delivering,
        "delivered" => DeliveryState::Delivered,
        "parked" => DeliveryState::Parked,
        "failed" => DeliveryState::DeadLettered,
        _ => return None,
    };
    Some((source.to_string(), state))
}

/// The same mapping in SQL over an `events` row aliased `e`, for the
/// `INSERT OR IGNORE INTO deliveries … SELECT … FROM events e` that copies a
/// pre-deliveries event into its row (`e.routed_at IS NULL`).
pub const LEGACY_STATE_SQL: &str = "CASE e.delivery_status \
     WHEN 'pending' THEN 'pending' WHEN 'delivering' THEN 'delivering' \
     WHEN 'delivered' THEN 'delivered' WHEN 'parked' THEN 'parked' \
     WHEN 'failed' THEN 'dead_lettered' END";

/// The destination of a dead-letter entry filed before deliveries (no
/// destination, its original the event itself): an entry that failed at
/// its downstream was that source's one delivery, so it replays to the
/// destination named after the source, when that destination still
/// exists; any other entry is an `ingest` entry (`None`).
pub fn legacy_entry_destination(
    source: &str,
    entry_code: crate::state::error_code::ErrorCode,
    source_destination_exists: bool,
) -> Option<String> {
    (crate::replay::verdict::failed_downstream(entry_code) && source_destination_exists)
        .then(|| source.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::error_code::ErrorCode;

    #[test]
    fn a_legacy_downstream_entry_replays_to_the_destination_named_after_its_source() {
        let table = [
            (ErrorCode::Upstream5xx, true, Some("shop")),
            (ErrorCode::Upstream4xx, true, Some("shop")),
            (ErrorCode::Upstream5xx, false, None),
            (ErrorCode::D1Unavailable, true, None),
            (ErrorCode::SchemaMismatch, true, None),
        ];
        for (code, exists, want) in table {
            let got = legacy_entry_destination("shop", code, exists);
            assert_eq!(got.as_deref(), want, "{code:?} {exists}");
        }
    }

    #[test]
    fn a_legacy_event_is_one_delivery_named_after_its_source() {
        let table = [
            ("none", None),
            ("pending", Some(DeliveryState::Pending)),
            ("delivering", Some(DeliveryState::Delivering)),
            ("delivered", Some(DeliveryState::Delivered)),
            ("parked", Some(DeliveryState::Parked)),
            ("failed", Some(DeliveryState::DeadLettered)),
        ];
        for (status, want) in table {
            let got = legacy_delivery("shop", status);
            assert_eq!(got.as_ref().map(|(_, s)| *s), want, "{status}");
            if let Some((name, state)) = got {
                assert_eq!(name, "shop");
                assert!(LEGACY_STATE_SQL.contains(&format!("THEN '{}'", state.as_str())));
            }
        }
    }
}
