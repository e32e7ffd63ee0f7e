//! The subrequest budget of one invocation (a cron, a `maintenance/run`,
//! a control-queue batch): every D1 call, R2 call, queue send and fetch
//! the invocation makes counts against one [`Budget`], created when the
//! invocation starts and passed down to each part (the leases, the
//! watchdog and its alerts, the sweep), so no part can spend what another
//! already did. The Workers Free plan allows 50 subrequests per
//! invocation (the Paid plan 1000); the project keeps every invocation
//! within [`INVOCATION_SUBREQUESTS`], so it runs on either.
//!
//! A D1 `batch` is one call however many statements it holds.

use std::fmt;

/// Subrequests one invocation may make: the Free plan's limit. Every call
/// is counted, so the budget needs no margin of its own.
pub const INVOCATION_SUBREQUESTS: u32 = 50;

/// What one invocation has left to spend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    limit: u32,
    spent: u32,
}

/// A part asked for more calls than the invocation has left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverBudget {
    /// Calls asked for.
    pub wanted: u32,
    /// Calls left.
    pub left: u32,
    /// The invocation's budget.
    pub limit: u32,
}

impl fmt::Display for OverBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "this invocation's subrequest budget ({}) has {} calls left, fewer than the {} asked for; nothing was called, the next run carries on",
            self.limit, self.left, self.wanted
        )
    }
}

impl std::error::Error for OverBudget {}

impl Budget {
    /// The budget of a new invocation.
    pub fn per_invocation() -> Budget {
        Budget::new(INVOCATION_SUBREQUESTS)
    }

    /// A budget of `limit` calls.
    pub fn new(limit: u32) -> Budget {
        Budget { limit, spent: 0 }
    }

    /// Calls still allowed.
    pub fn left(&self) -> u32 {
        self.limit - self.spent
    }

    /// Calls counted so far.
    pub fn spent(&self) -> u32 {
        self.spent
    }

    /// Counts `n` calls about to be made, or refuses (counting nothing)
    /// when fewer are left.
    pub fn spend(&mut self, n: u32) -> Result<(), OverBudget> {
        if n > self.left() {
            return Err(OverBudget {
                wanted: n,
                left: self.left(),
                limit: self.limit,
            });
        }
        self.spent += n;
        Ok(())
    }

    /// Hands a part everything left but `keep` (the calls that must still
    /// follow it), counted as spent now: the part spends at most that.
    pub fn allot(&mut self, keep: u32) -> u32 {
        let part = self.left().saturating_sub(keep);
        self.spent += part;
        part
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_counted_until_the_budget_is_spent_and_a_refusal_counts_nothing() {
        let mut b = Budget::new(5);
        assert_eq!(b.spend(2), Ok(()));
        assert_eq!(b.spend(3), Ok(()));
        assert_eq!(
            b.spend(1),
            Err(OverBudget {
                wanted: 1,
                left: 0,
                limit: 5
            })
        );
        assert_eq!((b.spent(), b.left()), (5, 0));
        assert!(OverBudget {
            wanted: 1,
            left: 0,
            limit: 5
        }
        .to_string()
        .contains("budget (5)"));
    }

    #[test]
    fn an_allotment_keeps_what_must_follow_and_never_goes_below_zero() {
        let table = [
            // (limit, spent before, keep, allotted, left after)
            (50, 7, 4, 39, 4),
            (50, 0, 0, 50, 0),
            (50, 48, 4, 0, 2),
            (10, 10, 4, 0, 0),
        ];
        for (limit, before, keep, want, left) in table {
            let mut b = Budget::new(limit);
            b.spend(before).unwrap();
            assert_eq!(b.allot(keep), want, "{limit} {before} {keep}");
            assert_eq!(b.left(), left);
        }
    }

    #[test]
    fn the_invocation_budget_is_the_free_plans() {
        assert_eq!(Budget::per_invocation().left(), 50);
    }
}
