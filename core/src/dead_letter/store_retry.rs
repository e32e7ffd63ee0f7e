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
//!
//! A batch that cannot store a message notes the failure in its own
//! [`BatchStoreFailure`] and reports it once when done (the
//! `dlq_cannot_store` alarm): a value passed down the batch, never state
//! shared by the isolate, so two batches running at once in one isolate
//! each report their own failure.

use crate::alarms::cannot_store::StoreFailure;
use crate::retry::policy::MAX_QUEUE_DELAY_S;
use crate::support::d1_error::classify_d1_error;
use crate::support::redact::truncate;

/// The first store failure of one batch, for its one cannot-store report.
#[derive(Debug, Default)]
pub struct BatchStoreFailure(Option<StoreFailure>);

impl BatchStoreFailure {
    /// Notes that `queue_message_id` could not be stored because of `err`;
    /// a batch reports its first failure, so later ones are not kept.
    pub fn note(&mut self, queue_message_id: &str, err: &str) {
        self.0.get_or_insert_with(|| StoreFailure {
            code: classify_d1_error(err).code.as_str().to_string(),
            message: truncate(err, 300).to_string(),
            queue_message_id: queue_message_id.to_string(),
            source: None,
        });
    }

    /// The failure to report, if the batch noted one.
    pub fn into_report(self) -> Option<StoreFailure> {
        self.0
    }
}

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
    fn each_batch_reports_its_own_first_store_failure() {
        let (mut a, mut b, c) = (
            BatchStoreFailure::default(),
            BatchStoreFailure::default(),
            BatchStoreFailure::default(),
        );
        a.note("msg-a1", "D1_ERROR: D1 is overloaded");
        b.note("msg-b1", "D1_ERROR: no such table: dead_letters");
        a.note("msg-a2", "D1_ERROR: no such table: dead_letters");
        let a = a.into_report().expect("batch a noted a failure");
        let b = b.into_report().expect("batch b noted a failure");
        assert_eq!(
            a.queue_message_id, "msg-a1",
            "a batch reports its first failure"
        );
        assert_eq!(a.message, "D1_ERROR: D1 is overloaded");
        assert_eq!(
            b.queue_message_id, "msg-b1",
            "another batch's note is its own"
        );
        assert!(b.message.contains("no such table"));
        assert_eq!(
            c.into_report(),
            None,
            "a batch that stored everything reports nothing"
        );
    }

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
