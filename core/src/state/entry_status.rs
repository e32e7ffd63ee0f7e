//! The lifecycle of a dead-letter entry (`dead_letters.status`).

use super::named_states;

named_states! {
    /// The status of one dead-letter entry.
    pub enum EntryStatus ("dead-letter status") {
        /// Waiting for a decision.
        Pending = "pending",
        /// Replayed successfully; kept for history.
        Replayed = "replayed",
        /// Replay failed `MAX_REPLAY_ATTEMPTS` times; terminal, kept for audit.
        Poisoned = "poisoned",
        /// Kept as history by an operator's decision; out of the depth.
        Archived = "archived",
        /// Terminal: its payload was erased; identity and evidence stay.
        Discarded = "discarded",
    }
}
