//! What one watchdog run may spend of its invocation's subrequest budget
//! (`crate::support::subrequests`): its fixed calls, and as many alerts as the rest
//! leaves, at most `machine::MAX_ALERTS_PER_RUN`.

use super::cannot_store::WRITE_TRIES;
use super::machine::MAX_ALERTS_PER_RUN;

/// Subrequests a watchdog run makes before its alerts: take its lease (a
/// read and a compare-and-set), read the figures, store the episodes.
pub const CALLS_BEFORE_ALERTS: u32 = 4;
/// Subrequests a watchdog run may still make after its alerts: store how
/// they went, the cannot-store object at its worst (a read and a put per
/// try, its own alert and the put recording it), flush the counters, give
/// the lease back.
pub const CALLS_AFTER_ALERTS: u32 = 1 + 2 * WRITE_TRIES as u32 + 2 + 1 + 1;

/// Alerts one run may send with `left` subrequests left after the calls
/// before them: [`MAX_ALERTS_PER_RUN`] at most, fewer when the budget
/// would not leave [`CALLS_AFTER_ALERTS`]; the rest wait for the next run.
pub fn alerts_within(left: u32) -> usize {
    MAX_ALERTS_PER_RUN.min(left.saturating_sub(CALLS_AFTER_ALERTS) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_alerts_of_a_run_fit_the_budget_it_has_left() {
        let after = CALLS_AFTER_ALERTS;
        let table = [
            (0, 0),
            (after, 0),
            (after + 1, 1),
            (after + 3, 3),
            (after + MAX_ALERTS_PER_RUN as u32, MAX_ALERTS_PER_RUN),
            (1_000, MAX_ALERTS_PER_RUN),
        ];
        for (left, want) in table {
            assert_eq!(alerts_within(left), want, "{left} calls left");
        }
    }

    #[test]
    fn a_whole_watchdog_run_leaves_most_of_an_invocation_to_the_sweep() {
        let worst = CALLS_BEFORE_ALERTS + MAX_ALERTS_PER_RUN as u32 + CALLS_AFTER_ALERTS;
        assert!(
            worst <= crate::support::subrequests::INVOCATION_SUBREQUESTS / 2,
            "{worst}"
        );
    }
}
