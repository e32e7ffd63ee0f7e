//! How a job's steps are paced. A step handles a bounded slice in batches
//! of `concurrency`, each batch starting on a schedule anchored at the
//! step's due time; the next step is due when the slice's share of the
//! rate has passed. Anchoring on due times (not on when a message happened
//! to arrive) keeps the mean rate at `rate_per_s` across steps.

/// Entries per step at most: a step must stay well inside an invocation's
/// subrequest and time budget (each replay is a call to the relay).
pub const MAX_STEP_ENTRIES: u32 = 50;
/// The wall time one step aims to cover.
pub const STEP_TARGET_MS: f64 = 2_000.0;

/// Entries the next step handles.
pub fn step_entries(rate_per_s: f64, concurrency: u32) -> u32 {
    let by_rate = (rate_per_s * STEP_TARGET_MS / 1000.0).floor() as u32;
    by_rate
        .max(concurrency.min(MAX_STEP_ENTRIES))
        .clamp(1, MAX_STEP_ENTRIES)
}

/// How long a full step's share of the rate lasts: the longest a working
/// job goes between two steps, so between two writes (its resume check
/// allows for it).
pub fn step_interval_ms(rate_per_s: f64, concurrency: u32) -> i64 {
    next_due_ms(0, step_entries(rate_per_s, concurrency), rate_per_s)
}

/// When batch `index` of a step starts, in ms after the step's due time.
pub fn batch_offset_ms(index: usize, concurrency: u32, rate_per_s: f64) -> i64 {
    (index as f64 * f64::from(concurrency) / rate_per_s * 1000.0).round() as i64
}

/// When the step after one that handled `handled` entries is due.
pub fn next_due_ms(due_ms: i64, handled: u32, rate_per_s: f64) -> i64 {
    due_ms + (f64::from(handled.max(1)) / rate_per_s * 1000.0).round() as i64
}

/// The `delaySeconds` for a message due at `due_ms`: whole seconds, rounded
/// down, so it arrives no later than due and the step waits out the rest.
pub fn delay_s(due_ms: i64, now_ms: i64) -> u32 {
    ((due_ms - now_ms).max(0) / 1000) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_bounded_and_cover_about_two_seconds() {
        let table = [
            (10.0, 5, 20),
            (100.0, 20, 50),
            (0.1, 5, 5),
            (0.5, 1, 1),
            (1.0, 1, 2),
            (3.0, 50, 50),
        ];
        for (rate, concurrency, want) in table {
            assert_eq!(
                step_entries(rate, concurrency),
                want,
                "{rate} {concurrency}"
            );
        }
    }

    #[test]
    fn offsets_and_due_times_follow_the_rate() {
        assert_eq!(batch_offset_ms(0, 5, 10.0), 0);
        assert_eq!(batch_offset_ms(3, 5, 10.0), 1_500);
        assert_eq!(next_due_ms(1_000, 20, 10.0), 3_000);
        assert_eq!(next_due_ms(0, 1, 0.1), 10_000);
        assert_eq!(next_due_ms(0, 0, 2.0), 500, "an empty step still moves on");
        assert_eq!(step_interval_ms(10.0, 5), 2_000);
        assert_eq!(step_interval_ms(0.1, 50), 500_000, "50 at once, then wait");
        assert_eq!(step_interval_ms(100.0, 20), 500);
        let table = [(5_000, 0, 5), (5_999, 0, 5), (1_000, 2_000, 0)];
        for (due, now, want) in table {
            assert_eq!(delay_s(due, now), want);
        }
    }
}
