//! When a delivery's `deliveries` message counts as outstanding (DESIGN §3,
//! "At most once successfully, and always accounted"): from its send until
//! its due time (`deliveries.due_at`) plus `MESSAGE_OVERDUE`. While it is
//! outstanding, a redelivered or duplicated `webhooks` message sends no
//! second one, and a message that arrives before the row is due (an extra
//! copy) calls nothing. Once it is overdue, the periodic check sends it
//! again and counts it, so a lost message never strands a delivery.

use crate::support::env::{text, ConfigEnv, ConfigError};

/// Default `MESSAGE_OVERDUE`: a queue's own redelivery and batching delays
/// stay well inside it, and a lost message costs at most this much.
pub const DEFAULT_MESSAGE_OVERDUE_MS: i64 = 5 * 60_000;

/// The shortest `MESSAGE_OVERDUE` accepted: below it a slow batch would
/// look lost and be sent twice (harmless, since the claim checks `due_at`,
/// but noisy).
pub const MIN_MESSAGE_OVERDUE_MS: i64 = 5_000;

/// How early a message may arrive against its row's `due_at` and still be
/// the one due: a queue's delay is whole seconds, rounded.
pub const DUE_SLACK_MS: i64 = 2_000;

/// Reads `MESSAGE_OVERDUE` (a duration such as `5m` or `30s`).
pub fn load(env: &impl ConfigEnv) -> Result<i64, ConfigError> {
    let key = "MESSAGE_OVERDUE";
    let Some(raw) = text(env, key) else {
        return Ok(DEFAULT_MESSAGE_OVERDUE_MS);
    };
    let ms =
        crate::support::duration::parse_duration_ms(&raw).map_err(|p| ConfigError::new(key, p))?;
    if ms < MIN_MESSAGE_OVERDUE_MS {
        return Err(ConfigError::new(
            key,
            format!("'{raw}' is shorter than {}s; a delivery's message needs at least that long to arrive", MIN_MESSAGE_OVERDUE_MS / 1000),
        ));
    }
    Ok(ms)
}

/// The `due_at` before which a pending delivery's message is overdue at
/// `now_ms` (a row without `due_at`, left by the previous release, counts
/// from its last change).
pub fn overdue_before(now_ms: i64, message_overdue_ms: i64) -> i64 {
    now_ms - message_overdue_ms
}

/// The latest `due_at` a message arriving at `now_ms` may claim.
pub fn due_by(now_ms: i64) -> i64 {
    now_ms + DUE_SLACK_MS
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};
    use std::collections::BTreeMap;

    fn env(v: Option<&str>) -> BTreeMap<String, Value> {
        let mut e = BTreeMap::new();
        if let Some(v) = v {
            e.insert("MESSAGE_OVERDUE".to_string(), json!(v));
        }
        e
    }

    #[test]
    fn message_overdue_reads_a_duration_with_a_floor() {
        let table = [
            (None, Ok(300_000)),
            (Some("30s"), Ok(30_000)),
            (Some("5s"), Ok(5_000)),
            (Some("1s"), Err(())),
            (Some("soon"), Err(())),
        ];
        for (raw, want) in table {
            assert_eq!(load(&env(raw)).map_err(|_| ()), want, "{raw:?}");
        }
        let e = load(&env(Some("1s"))).unwrap_err();
        assert!(e.to_string().contains("MESSAGE_OVERDUE"), "{e}");
    }

    #[test]
    fn a_message_is_outstanding_until_due_plus_the_margin() {
        assert_eq!(overdue_before(1_000_000, 300_000), 700_000);
        assert_eq!(due_by(10_000), 12_000);
    }
}
