//! What storing one dead letter did.

use super::named_states;

named_states! {
    /// The result of writing one envelope.
    pub enum StoreOutcome ("store outcome") {
        /// A new entry.
        Stored = "stored",
        /// An identical pending entry was marked seen again instead.
        Deduped = "deduped",
        /// This DLQ message was stored before; nothing changed.
        Redelivered = "redelivered",
    }
}

impl StoreOutcome {
    /// Reads the outcome from the rows changed by the dedupe update and the
    /// insert, which run in that order in one transaction.
    pub fn from_changes(deduped_rows: usize, inserted_rows: usize) -> StoreOutcome {
        if deduped_rows > 0 {
            StoreOutcome::Deduped
        } else if inserted_rows > 0 {
            StoreOutcome::Stored
        } else {
            StoreOutcome::Redelivered
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_outcome_follows_the_changed_rows() {
        let table = [
            (1, 0, StoreOutcome::Deduped),
            (2, 0, StoreOutcome::Deduped),
            (0, 1, StoreOutcome::Stored),
            (0, 0, StoreOutcome::Redelivered),
        ];
        for (d, i, want) in table {
            assert_eq!(StoreOutcome::from_changes(d, i), want);
        }
    }
}
