//! How a job's steps are sized and handed on. What a rate means is
//! [`crate::deliver::pacing`]: a step hands its calls start times from one
//! [`crate::deliver::pacing::Pacer`] anchored at the step's due time, and the next
//! step is due when that pacer's next start would be, so the spacing holds
//! across steps as it does inside one.

use crate::deliver::pacing::{calls_within, spacing_ms};

/// Entries per step at most: a step must stay well inside an invocation's
/// subrequest and time budget (each replay is a call to the relay).
pub const MAX_STEP_ENTRIES: u32 = 50;
/// The wall time one step's starts aim to cover. Each hand-over to the
/// next step (a D1 write, a queue message, the reads that start a step)
/// costs time a paced start never catches up on, so steps are long enough
/// that a run has few of them; a steering command still takes effect
/// within one batch, since a step reads the job before each.
pub const STEP_TARGET_MS: i64 = 5_000;

/// Entries the next step handles: about [`STEP_TARGET_MS`] of starts at the
/// rate, at least one and at most [`MAX_STEP_ENTRIES`]. Concurrency does
/// not enlarge a step: at 0.1/s a step is one entry, and the next one is
/// due 10 s later by the queue's delay, not by a wait inside this step.
pub fn step_entries(rate_per_s: f64) -> u32 {
    calls_within(STEP_TARGET_MS, rate_per_s).min(MAX_STEP_ENTRIES)
}

/// How long a full step's share of the rate lasts: the longest a working
/// job goes between two steps, so between two writes (its resume check
/// allows for it).
pub fn step_interval_ms(rate_per_s: f64) -> i64 {
    (f64::from(step_entries(rate_per_s)) * spacing_ms(rate_per_s)).ceil() as i64
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
    fn steps_cover_about_five_seconds_of_starts_and_stay_bounded() {
        let table = [
            (10.0, 50),
            (5.0, 25),
            (100.0, 50),
            (0.1, 1),
            (0.5, 2),
            (1.0, 5),
            (3.0, 15),
            (4.0, 20),
        ];
        for (rate, want) in table {
            assert_eq!(step_entries(rate), want, "{rate}/s");
        }
    }

    #[test]
    fn step_intervals_and_delays_follow_the_rate() {
        assert_eq!(step_interval_ms(10.0), 5_000);
        assert_eq!(step_interval_ms(0.1), 10_000, "one entry, then 10 s");
        assert_eq!(step_interval_ms(100.0), 500);
        assert_eq!(step_interval_ms(3.0), 5_000);
        let table = [(5_000, 0, 5), (5_999, 0, 5), (1_000, 2_000, 0)];
        for (due, now, want) in table {
            assert_eq!(delay_s(due, now), want);
        }
    }
}
