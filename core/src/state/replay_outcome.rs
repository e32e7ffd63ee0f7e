//! The outcome of one replay decision, as audited (`replay_audit.outcome`).

use super::named_states;

named_states! {
    /// What one replay of one entry came to.
    pub enum ReplayOutcome ("replay outcome") {
        /// Delivered (or already delivered, or nothing to deliver).
        Succeeded = "succeeded",
        /// Failed; the entry stays pending.
        Failed = "failed",
        /// Failed for the last allowed time; the entry is now poisoned.
        Poisoned = "poisoned",
        /// Identical to an entry already replayed in the same run.
        Deduped = "deduped",
    }
}

impl ReplayOutcome {
    /// Whether it counts as a success in a run's arithmetic.
    pub fn succeeded(self) -> bool {
        self == ReplayOutcome::Succeeded
    }
}
