//! The tables the sweep archives (the first part of an archive key), and
//! why an entry left D1 (`dead_letter_tombstones.cause`), DESIGN §5.

use super::named_states;

named_states! {
    /// A D1 table whose rows the sweep writes to R2 before deleting them.
    /// The stored name is both the SQL table name and the archive key prefix.
    pub enum ArchiveTable ("archive table") {
        /// Ingested events (`EVENT_RETENTION`, or the size cap).
        Events = "events",
        /// Failed consumer attempts, with their event.
        Attempts = "attempts",
        /// Claim-checked bodies, with their event.
        Payloads = "payloads",
        /// Delivery steps, with their event.
        EventSteps = "event_steps",
        /// An event's deliveries (one per destination), with their event.
        Deliveries = "deliveries",
        /// Dead letters: resolved ones after `DLQ_RETENTION`, pending ones when evicted.
        DeadLetters = "dead_letters",
        /// Tombstones older than `DLQ_RETENTION`.
        Tombstones = "dead_letter_tombstones",
        /// Decisions (`replay_audit`) older than `DLQ_RETENTION`.
        Audit = "replay_audit",
        /// Finished jobs older than `DLQ_RETENTION`.
        Jobs = "jobs",
        /// The entries of those jobs, with their job.
        JobEntries = "job_entries",
        /// Idle drains older than `EVENT_RETENTION`.
        Drains = "drains",
        /// Resolved alarms older than `DLQ_RETENTION`.
        Alarms = "alarms",
    }
}

named_states! {
    /// Why a dead-letter entry left D1, kept on its tombstone.
    pub enum TombstoneCause ("tombstone cause") {
        /// Evicted at capacity while pending: restores as `pending`.
        Evicted = "evicted",
        /// Swept by `DLQ_RETENTION` once resolved: restores with the status it had.
        Swept = "swept",
    }
}

named_states! {
    /// Why the sweep moved a chunk (kept in `sweep_state.journal`).
    pub enum SweepRule ("sweep rule") {
        /// Older than the table's retention.
        Age = "age",
        /// D1 above `D1_MAX_BYTES`: the oldest sweepable events, any age.
        Size = "size",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_names_roundtrip_and_unknown_ones_are_refused() {
        for t in ArchiveTable::ALL {
            assert_eq!(ArchiveTable::parse(t.as_str()), Ok(*t));
        }
        for c in TombstoneCause::ALL {
            assert_eq!(TombstoneCause::parse(c.as_str()), Ok(*c));
        }
        for r in SweepRule::ALL {
            assert_eq!(SweepRule::parse(r.as_str()), Ok(*r));
        }
        assert!(ArchiveTable::parse("sqlite_master").is_err());
    }
}
