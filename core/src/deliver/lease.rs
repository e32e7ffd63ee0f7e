//! A delivery's lease (DESIGN §3, "At most once successfully, and always
//! accounted"): the one rule for how long a holder keeps a delivery
//! `delivering`, and for when a lease has run out. Every path that leases
//! a delivery (the consumers, the drain, a replay) asks [`lease_until`]
//! with its own figures, and every statement that asks whether a lease
//! still holds reads [`lease_end_sql`]; nothing else computes either.
//!
//! A lease lasts until its holder can have recorded the outcome: what
//! remains of its wait before the calls start (its rate's reserved start,
//! a call budget), the calls it makes one after another (a probe, then the
//! rest) at the longest timeout among those it awaits before it records,
//! and a margin for the record itself. `DELIVERY_TIMEOUT_MS` plays no part:
//! a destination's own `timeout_ms` (up to 120 s) does.

use crate::deliver::destinations::DELIVERY_TIMEOUT_RANGE_MS;
use crate::deliver::rate_slots::{CONSUMER_MAX_WAIT_MS, DRAIN_MAX_WAIT_MS, REPLAY_MAX_WAIT_MS};
use crate::parking::Caller;

/// What the holder may still need after its last call settles: the write
/// of its outcome (retried once in place), and the isolate's own delays.
pub const LEASE_MARGIN_MS: i64 = 30_000;

/// How long a lease with no `lease_until` of its own (taken by the previous
/// release, which wrote only `claimed_at`) is honoured: the longest timeout
/// a destination may have plus the margin, which covers every bound that
/// release used.
pub const LEGACY_LEASE_MS: i64 = *DELIVERY_TIMEOUT_RANGE_MS.end() as i64 + LEASE_MARGIN_MS;

/// The shortest time the previous release honoured a lease it found (a
/// 100 ms timeout plus its 30 s margin, counted from `claimed_at`).
pub const PREVIOUS_RELEASE_MIN_BOUND_MS: i64 =
    *DELIVERY_TIMEOUT_RANGE_MS.start() as i64 + LEASE_MARGIN_MS;

/// The `claimed_at` a lease ending at `lease_until_ms` is written with: now,
/// or later, so that the previous release (rolled back over this schema,
/// reading only `claimed_at` against its own bound) honours the lease until
/// its end and never calls a delivery whose call is in flight. It also
/// names the lease (every later write of its holder checks it).
pub fn claim_stamp(now_ms: i64, lease_until_ms: i64) -> i64 {
    now_ms.max(lease_until_ms - PREVIOUS_RELEASE_MIN_BOUND_MS)
}

/// What a holder awaits before it records: the figures the rule takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Holder {
    /// The longest wait before a call may start (a rate's reserved start,
    /// what remains of a call budget), in ms from the claim.
    pub wait_ms: i64,
    /// Calls the holder makes one after another for one destination before
    /// it records (1; 2 when a probe goes first).
    pub calls_in_series: u32,
    /// The longest `timeout_ms` among the calls it awaits.
    pub longest_timeout_ms: u64,
}

impl Holder {
    /// A batch of `caller`'s: its calls may wait for their rate's reserved
    /// start (at most the caller's wait, `crate::deliver::rate_slots`) and
    /// for their turn in the call scheduler (at most `budget_ms`, after
    /// which a call not started is handed on, its lease given back), a
    /// destination's calls go in at most two waves (a probe, then the
    /// rest), and the holder records once all of them settled, so the
    /// longest timeout among the batch's destinations counts. A batch
    /// without a budget makes one call per destination at a time (a
    /// replay), so it never waits for a turn behind its own calls.
    pub fn batch(caller: Caller, longest_timeout_ms: u64, budget_ms: Option<i64>) -> Holder {
        let rate_wait_ms = match caller {
            Caller::Consumer => CONSUMER_MAX_WAIT_MS,
            Caller::DrainStep => DRAIN_MAX_WAIT_MS,
            Caller::Replay => REPLAY_MAX_WAIT_MS,
        };
        Holder {
            wait_ms: rate_wait_ms.max(budget_ms.unwrap_or(0)),
            calls_in_series: 2,
            longest_timeout_ms,
        }
    }
}

/// When a lease taken at `claimed_at_ms` by `holder` ends.
pub fn lease_until(claimed_at_ms: i64, holder: Holder) -> i64 {
    let calls = i64::from(holder.calls_in_series.max(1));
    claimed_at_ms
        + holder.wait_ms.max(0)
        + calls.saturating_mul(holder.longest_timeout_ms as i64)
        + LEASE_MARGIN_MS
}

/// When a lease ends, as stored: its `lease_until` when the holder wrote
/// one after its `claimed_at` (this release), else `claimed_at` plus
/// [`LEGACY_LEASE_MS`] (the previous release's claim, which may have
/// re-taken a row over an older `lease_until`).
pub fn lease_end(claimed_at_ms: Option<i64>, lease_until_ms: Option<i64>) -> Option<i64> {
    let claimed = claimed_at_ms?;
    Some(match lease_until_ms {
        Some(until) if until > claimed => until,
        _ => claimed + LEGACY_LEASE_MS,
    })
}

/// [`lease_end`] as SQL over the columns of `table` (an alias such as `d`,
/// or the table's name): NULL when the row holds no lease.
pub fn lease_end_sql(table: &str) -> String {
    format!(
        "(CASE WHEN {table}.lease_until > {table}.claimed_at THEN {table}.lease_until \
         ELSE {table}.claimed_at + {LEGACY_LEASE_MS} END)"
    )
}

/// Whether a row in `delivering` still holds its lease at `now_ms`.
pub fn lease_live(claimed_at_ms: Option<i64>, lease_until_ms: Option<i64>, now_ms: i64) -> bool {
    lease_end(claimed_at_ms, lease_until_ms).is_some_and(|end| end >= now_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_covers_the_wait_the_calls_in_series_and_the_margin() {
        let table = [
            // (wait, calls in series, longest timeout) → lease length
            ((0, 1, 10_000), 40_000),
            ((2_000, 1, 20_000), 52_000),
            ((0, 2, 120_000), 270_000),
            ((-5, 0, 100), 30_100),
        ];
        for ((wait_ms, calls_in_series, longest_timeout_ms), length) in table {
            let holder = Holder {
                wait_ms,
                calls_in_series,
                longest_timeout_ms,
            };
            assert_eq!(lease_until(1_000, holder), 1_000 + length, "{holder:?}");
        }
    }

    #[test]
    fn a_batch_lease_covers_two_waves_after_the_callers_wait() {
        let h = Holder::batch(Caller::Consumer, 20_000, Some(2_000));
        assert_eq!(
            lease_until(0, h),
            CONSUMER_MAX_WAIT_MS + 40_000 + LEASE_MARGIN_MS
        );
        // A 20 s call is covered well past DELIVERY_TIMEOUT_MS + 30 s.
        assert!(
            lease_until(0, Holder::batch(Caller::Replay, 60_000, None)) > 60_000 + LEASE_MARGIN_MS
        );
        // A budget longer than the rate's wait is what the calls may wait.
        let long = Holder::batch(Caller::Consumer, 1_000, Some(10_000));
        assert_eq!(lease_until(0, long), 10_000 + 2_000 + LEASE_MARGIN_MS);
    }

    #[test]
    fn a_lease_ends_at_its_own_bound_or_the_legacy_one() {
        let table = [
            // (claimed_at, lease_until) → end
            ((None, None), None),
            ((None, Some(9)), None),
            ((Some(1_000), Some(61_000)), Some(61_000)),
            // The previous release re-took the row after our lease ended.
            (
                (Some(100_000), Some(61_000)),
                Some(100_000 + LEGACY_LEASE_MS),
            ),
            ((Some(1_000), None), Some(1_000 + LEGACY_LEASE_MS)),
        ];
        for ((claimed, until), end) in table {
            assert_eq!(lease_end(claimed, until), end, "{claimed:?} {until:?}");
        }
        assert!(lease_live(Some(0), Some(50), 50));
        assert!(!lease_live(Some(0), Some(50), 51));
        assert!(!lease_live(None, Some(50), 0));
        assert_eq!(LEGACY_LEASE_MS, 150_000);
    }

    #[test]
    fn a_lease_is_stamped_so_that_the_previous_release_honours_it_to_its_end() {
        let table = [
            // (now, lease until) → claimed_at
            ((0, 20_000), 0),
            ((0, 100_000), 100_000 - 30_100),
            ((5_000, 35_100), 5_000),
        ];
        for ((now, until), stamp) in table {
            let claimed = claim_stamp(now, until);
            assert_eq!(claimed, stamp, "{now} {until}");
            // The previous release took a lease over once claimed_at was
            // older than its bound, at least PREVIOUS_RELEASE_MIN_BOUND_MS.
            assert!(claimed + PREVIOUS_RELEASE_MIN_BOUND_MS >= until);
            assert_eq!(lease_end(Some(claimed), Some(until)), Some(until));
        }
    }

    #[test]
    fn the_sql_reads_the_same_rule() {
        let sql = lease_end_sql("d");
        assert!(sql.contains("d.lease_until > d.claimed_at"));
        assert!(sql.contains(&format!("d.claimed_at + {LEGACY_LEASE_MS}")));
    }
}
