//! How long the DLQ worker waits before retrying a dead letter it could not
//! store.
//!
//! A dead letter must never be dropped, and the platform deletes a message
//! after the consumer's `max_retries` (100 here) or the queue's retention
//! (4 days by default), whichever comes first. A fixed 30 s delay spends
//! 100 attempts in 50 minutes, so the delay doubles from the base up to the
//! queue's 12 h maximum: 30 s, 60 s, … 8 h 32 min, then 12 h. The first 11
//! attempts take about 17 h together and the remaining 89 take 12 h each,
//! so the retries last about 45 days, well past the retention: the message
//! expires before the budget does, and an alarm has days to fire.

use crate::retry_policy::MAX_QUEUE_DELAY_S;

/// The delay after the `attempts`-th failed store (1-based).
pub fn store_retry_delay_s(base_s: u32, attempts: u32) -> u32 {
    let doublings = attempts.saturating_sub(1).min(31);
    let delay = u64::from(base_s.max(1)) << doublings;
    delay.min(u64::from(MAX_QUEUE_DELAY_S)) as u32
}

/// How long the retries of one message last in all, in seconds.
pub fn total_retry_span_s(base_s: u32, max_retries: u32) -> u64 {
    (1..=max_retries)
        .map(|a| u64::from(store_retry_delay_s(base_s, a)))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delay_doubles_up_to_the_queue_maximum() {
        let table = [
            (1, 30),
            (2, 60),
            (3, 120),
            (11, 30_720),
            (12, MAX_QUEUE_DELAY_S),
            (100, MAX_QUEUE_DELAY_S),
            (u32::MAX, MAX_QUEUE_DELAY_S),
        ];
        for (attempts, want) in table {
            assert_eq!(
                store_retry_delay_s(30, attempts),
                want,
                "attempt {attempts}"
            );
        }
        assert_eq!(store_retry_delay_s(0, 1), 1, "a zero base still waits");
    }

    #[test]
    fn one_hundred_retries_outlast_the_default_four_day_retention() {
        let four_days = 4 * 86_400;
        assert!(total_retry_span_s(30, 100) > four_days);
        assert!(total_retry_span_s(1, 100) > four_days);
    }
}
