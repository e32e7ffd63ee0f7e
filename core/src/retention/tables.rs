//! Which rows each table may lose, and by which age (DESIGN §5): no table
//! grows forever, and nothing still in use is ever swept.
//!
//! | table | age | counted from | only when |
//! |---|---|---|---|
//! | `events` (+ `attempts`, `payloads`, `event_steps` by event) | `EVENT_RETENTION`, or any age above `D1_MAX_BYTES` | `ingested_at` | delivery `none`, `delivered` or `failed` (never `pending`, `delivering`, `parked`) |
//! | `attempts` without an event | `EVENT_RETENTION` | `at` | always |
//! | `payloads` without an event | `EVENT_RETENTION` | `created_at` | no dead letter in D1 refers to it |
//! | `dead_letters` | `DLQ_RETENTION` | `resolved_at` | `replayed`, `poisoned`, `archived`, `discarded` (never `pending`) |
//! | `replay_audit` | `DLQ_RETENTION` | `at` | always |
//! | `jobs` (+ `job_entries`) | `DLQ_RETENTION` | `finished_at` | `completed`, `aborted`, `cancelled` |
//! | `dead_letter_tombstones` | `DLQ_RETENTION` | `evicted_at` (when it left D1) | always (the archive keeps the object) |
//! | `drains` | `EVENT_RETENTION` | `updated_at` | no event is parked for its destination |
//! | `alarms` | `DLQ_RETENTION` | `resolved_at` | `resolved` (its alert is owed no longer at that age: `alarms::machine::Owing`) |

use crate::config::RetentionConfig;
use crate::state::{AlarmState, ArchiveTable, DeliveryStatus, EntryStatus, JobStatus};
use crate::UnixMillis;

/// Delivery statuses an event may be swept in.
pub const SWEEPABLE_DELIVERY: [DeliveryStatus; 3] = [
    DeliveryStatus::None,
    DeliveryStatus::Delivered,
    DeliveryStatus::Failed,
];
/// Entry statuses that count as resolved; `pending` never does.
pub const RESOLVED_ENTRY: [EntryStatus; 4] = [
    EntryStatus::Replayed,
    EntryStatus::Poisoned,
    EntryStatus::Archived,
    EntryStatus::Discarded,
];
/// Job statuses that are final.
pub const FINISHED_JOB: [JobStatus; 3] = [
    JobStatus::Completed,
    JobStatus::Aborted,
    JobStatus::Cancelled,
];

/// The state a candidate row was read in, for the eligibility check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowState {
    /// An event's delivery status.
    Delivery(DeliveryStatus),
    /// A dead letter's status.
    Entry(EntryStatus),
    /// A job's status.
    Job(JobStatus),
    /// An alarm episode's state.
    Alarm(AlarmState),
    /// A table whose rows carry no state.
    Plain,
}

/// How one table's rows become sweepable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgeRule {
    /// The table.
    pub table: ArchiveTable,
    /// The column the age is counted from; the glue's query orders by it.
    pub column: &'static str,
    /// How old a row must be.
    pub age_ms: i64,
}

impl AgeRule {
    /// Rows with `column` before this may go.
    pub fn cutoff(&self, now: UnixMillis) -> UnixMillis {
        now - self.age_ms
    }
}

/// The tables swept on their own, in the sweep's order: events first (they
/// are what fills D1), then the rest. `event_steps` and `job_entries` go
/// only with their event or job ([`linked`]).
pub fn age_rules(cfg: &RetentionConfig) -> [AgeRule; 9] {
    let (ev, dlq) = (cfg.event_retention_ms, cfg.dlq_retention_ms);
    let rule = |table, column, age_ms| AgeRule {
        table,
        column,
        age_ms,
    };
    [
        rule(ArchiveTable::Events, "ingested_at", ev),
        rule(ArchiveTable::Attempts, "at", ev),
        rule(ArchiveTable::Payloads, "created_at", ev),
        rule(ArchiveTable::DeadLetters, "resolved_at", dlq),
        rule(ArchiveTable::Audit, "at", dlq),
        rule(ArchiveTable::Jobs, "finished_at", dlq),
        rule(ArchiveTable::Tombstones, "evicted_at", dlq),
        rule(ArchiveTable::Drains, "updated_at", ev),
        rule(ArchiveTable::Alarms, "resolved_at", dlq),
    ]
}

/// The tables whose rows leave with a row of `table`, keyed by its id.
pub fn linked(table: ArchiveTable) -> &'static [ArchiveTable] {
    match table {
        ArchiveTable::Events => &[
            ArchiveTable::Attempts,
            ArchiveTable::Payloads,
            ArchiveTable::EventSteps,
        ],
        ArchiveTable::Jobs => &[ArchiveTable::JobEntries],
        _ => &[],
    }
}

/// Whether a row of `table` read in `state` may be swept. `held` is what
/// the glue's read found that keeps it (a dead letter that refers to a
/// payload, an event parked for a drain's destination).
pub fn eligible(table: ArchiveTable, state: RowState, held: bool) -> bool {
    if held {
        return false;
    }
    match (table, state) {
        (ArchiveTable::Events, RowState::Delivery(s)) => SWEEPABLE_DELIVERY.contains(&s),
        (ArchiveTable::DeadLetters, RowState::Entry(s)) => RESOLVED_ENTRY.contains(&s),
        (ArchiveTable::Jobs, RowState::Job(s)) => FINISHED_JOB.contains(&s),
        // Age alone: an episode resolved for the alarms' age owes no alert
        // any more (`alarms::machine::Owing` gives up at the same age), so
        // an undelivered one, or one never owed, does not pile up.
        (ArchiveTable::Alarms, RowState::Alarm(s)) => s == AlarmState::Resolved,
        (
            ArchiveTable::Attempts
            | ArchiveTable::Payloads
            | ArchiveTable::Audit
            | ArchiveTable::Tombstones
            | ArchiveTable::Drains,
            RowState::Plain,
        ) => true,
        // A state that does not belong to the table: the read was wrong,
        // so the row stays.
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_in_use_is_ever_eligible() {
        use DeliveryStatus as D;
        use EntryStatus as E;
        let events = [
            (D::Delivered, true),
            (D::None, true),
            (D::Failed, true),
            (D::Pending, false),
            (D::Delivering, false),
            (D::Parked, false),
        ];
        for (s, want) in events {
            let got = eligible(ArchiveTable::Events, RowState::Delivery(s), false);
            assert_eq!(got, want, "event {s}");
        }
        let entries = [
            (E::Pending, false),
            (E::Archived, true),
            (E::Discarded, true),
        ];
        for (s, want) in entries {
            let got = eligible(ArchiveTable::DeadLetters, RowState::Entry(s), false);
            assert_eq!(got, want, "entry {s}");
        }
    }

    #[test]
    fn unfinished_jobs_firing_alarms_held_rows_and_mismatched_states_stay() {
        use ArchiveTable as T;
        let table = [
            (T::Jobs, RowState::Job(JobStatus::Running), false, false),
            (T::Jobs, RowState::Job(JobStatus::Paused), false, false),
            (T::Jobs, RowState::Job(JobStatus::Completed), false, true),
            (T::Alarms, RowState::Alarm(AlarmState::Firing), false, false),
            (
                T::Alarms,
                RowState::Alarm(AlarmState::Resolved),
                false,
                true,
            ),
            (T::Payloads, RowState::Plain, true, false),
            (T::Events, RowState::Plain, false, false),
        ];
        for (t, state, held, want) in table {
            assert_eq!(eligible(t, state, held), want, "{t} {state:?} held={held}");
        }
    }

    #[test]
    fn each_table_has_its_age_and_no_table_is_left_unbounded() {
        let cfg = RetentionConfig {
            event_retention_ms: 10,
            dlq_retention_ms: 20,
            d1_max_bytes: 1,
        };
        let rules = age_rules(&cfg);
        for t in ArchiveTable::ALL {
            let own = rules.iter().any(|r| r.table == *t);
            let with_parent = rules.iter().any(|r| linked(r.table).contains(t));
            assert!(own || with_parent, "{t} is bounded by nothing");
        }
        let age = |t| rules.iter().find(|r| r.table == t).unwrap().age_ms;
        assert_eq!(
            (age(ArchiveTable::Events), age(ArchiveTable::DeadLetters)),
            (10, 20)
        );
        assert_eq!(
            (age(ArchiveTable::Audit), age(ArchiveTable::Drains)),
            (20, 10)
        );
        assert_eq!(rules[0].cutoff(100), 90);
    }
}
