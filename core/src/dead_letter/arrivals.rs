//! Dead letters that arrived, counted by the minute: the stats'
//! `ingress_last_hour` and the `dlq_ingress` alarm.
//!
//! A dead letter arrives either as a new entry or by joining a pending
//! entry with its dedupe key (seen again): counting entries by their
//! `created_at` saw only the first of an event's dead letters, and none
//! that joined an entry stored before the hour. The database keeps the
//! arrivals per minute and code (`dead_letter_arrivals`, written by
//! triggers on `dead_letters`, migration 0021); the last hour is read
//! from the minute it began.

use crate::UnixMillis;

/// One bucket: a minute.
pub const BUCKET_MS: i64 = 60_000;

/// The window the stats and the alarm read: the last hour.
pub const WINDOW_MS: i64 = 3_600_000;

/// The minute (a bucket number, unix ms / [`BUCKET_MS`]) at `at_ms`.
pub fn bucket(at_ms: UnixMillis) -> i64 {
    at_ms.div_euclid(BUCKET_MS)
}

/// The first bucket of the last hour as of `now_ms`: arrivals are counted
/// from the start of that minute, so the window holds up to a minute more
/// than an hour, never less.
pub fn first_bucket_of_window(now_ms: UnixMillis) -> i64 {
    bucket(now_ms - WINDOW_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_starts_at_the_minute_an_hour_ago() {
        let table = [
            (3_600_000, 0),
            (3_659_999, 0),
            (3_660_000, 1),
            (1_796_579_891_787, (1_796_579_891_787 - 3_600_000) / 60_000),
        ];
        for (now, first) in table {
            assert_eq!(first_bucket_of_window(now), first, "{now}");
        }
        assert!(bucket(1_796_579_891_787 - 3_600_000) * BUCKET_MS <= 1_796_579_891_787 - 3_600_000);
    }
}
