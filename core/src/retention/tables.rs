//! What may be swept (DESIGN §5), stated once: which tables lose rows, by
//! which age, and what a row must satisfy besides its age. The sweep's SQL
//! (`platform/src/db/retention.rs`) reads candidates with [`alone`] and
//! guards every delete with it (and [`with_parent`] for linked rows), so
//! what is read as sweepable and what a delete may remove cannot drift;
//! nothing else restates the rule.
//!
//! | table | age | counted from | only when ([`alone`]) |
//! |---|---|---|---|
//! | `events` (+ `attempts`, `payloads`, `event_steps`, `deliveries` by event) | `EVENT_RETENTION`, or any age above `D1_MAX_BYTES` | `ingested_at` | no delivery row `pending`, `delivering` or `parked`; an event from before deliveries (`routed_at IS NULL`) also by its own `delivery_status`: `none`, `filtered`, `delivered` or `failed` |
//! | `attempts` without an event | `EVENT_RETENTION` | `at` | no event has its `event_id` |
//! | `payloads` without an event | `EVENT_RETENTION`, at least [`CLAIM_HOLD_MS`] | `created_at` | no event, and no dead letter in D1 refers to it |
//! | `dead_letters` | `DLQ_RETENTION` | `resolved_at` | `replayed`, `poisoned`, `archived`, `discarded` (never `pending`) |
//! | `replay_audit` | `DLQ_RETENTION` | `at` | always |
//! | `jobs` (+ `job_entries`) | `DLQ_RETENTION` | `finished_at` | `completed`, `aborted`, `cancelled` |
//! | `dead_letter_tombstones` | `DLQ_RETENTION` | `evicted_at` (when it left D1) | always (the archive keeps the object) |
//! | `drains` | `EVENT_RETENTION` | `updated_at` | no delivery row is parked for its destination, nor a legacy event (by its `parked_destination` or its source's name) |
//! | `alarms` | `DLQ_RETENTION` | `resolved_at` | `resolved` (at that age its alert is owed no longer: `alarms::machine::Owing`) |
//!
//! Not archived, so not here: `destination_bodies` and the R2 objects it
//! times go [`CLAIM_HOLD_MS`] after their last send, as
//! `crate::deliver::queue_destination` states.
//!
//! **An event's guard reads its `deliveries` rows, not its summary.**
//! `events.delivery_status` sums the rows up (`deliveries::summary`), but
//! only if every writer recomputes it; a writer interrupted between its
//! row write and its summary write, or one that forgets, would leave a
//! summary saying `delivered` over a row still `parked`, and the event
//! would be swept with a delivery owed. The rows are what the relay and
//! the drain act on, so the guard asks them (one primary-key lookup per
//! event: `NOT EXISTS` a row in [`UNSWEPT_DELIVERY`]). A stale summary then
//! costs nothing: the worst it does is nothing at all. An event from
//! before deliveries has no row to ask, and its own column is its one
//! delivery (`deliveries::legacy`), so for it the column is read as well
//! (a legacy event the relay copied into a row is held by both).
//!
//! The conditions are SQL text over the table's own name (`events.…`),
//! with states written from `core::state` names (constants of this crate,
//! never input), so D1's partial indexes (`events_parked`) still serve them.

use crate::retention::settings::RetentionConfig;
use crate::state::DeliveryState;
use crate::state::{AlarmState, ArchiveTable, DeliverySummary, EntryStatus, JobStatus};
use crate::UnixMillis;

/// Delivery statuses a legacy event (`routed_at IS NULL`) may be swept in.
pub const SWEEPABLE_DELIVERY: [DeliverySummary; 4] = [
    DeliverySummary::None,
    DeliverySummary::Filtered,
    DeliverySummary::Delivered,
    DeliverySummary::Failed,
];
/// Delivery states that hold their event in D1: a call is owed.
pub const UNSWEPT_DELIVERY: [DeliveryState; 3] = [
    DeliveryState::Pending,
    DeliveryState::Delivering,
    DeliveryState::Parked,
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

/// How long a claim-checked body without its event stays at least,
/// whatever `EVENT_RETENTION`: its message may still be on the relay's
/// queue (retried, or waiting in a backlog) and then on the DLQ's, each
/// holding a message at most 14 days (the platform's maximum retention).
/// Until its event is ingested or its dead letter stored, nothing in D1
/// refers to it, so only its age can keep it.
pub const CLAIM_HOLD_MS: i64 = 2 * 14 * 86_400_000;

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
    let rule = |table, age_ms| AgeRule {
        table,
        column: age_column(table),
        age_ms,
    };
    [
        rule(ArchiveTable::Events, ev),
        rule(ArchiveTable::Attempts, ev),
        rule(ArchiveTable::Payloads, ev.max(CLAIM_HOLD_MS)),
        rule(ArchiveTable::DeadLetters, dlq),
        rule(ArchiveTable::Audit, dlq),
        rule(ArchiveTable::Jobs, dlq),
        rule(ArchiveTable::Tombstones, dlq),
        rule(ArchiveTable::Drains, ev),
        rule(ArchiveTable::Alarms, dlq),
    ]
}

/// The column a table's age is counted from (a linked table's is its
/// parent's, so it has none of its own: `""`).
pub fn age_column(table: ArchiveTable) -> &'static str {
    match table {
        ArchiveTable::Events => "ingested_at",
        ArchiveTable::Attempts | ArchiveTable::Audit => "at",
        ArchiveTable::Payloads => "created_at",
        ArchiveTable::DeadLetters | ArchiveTable::Alarms => "resolved_at",
        ArchiveTable::Jobs => "finished_at",
        ArchiveTable::Tombstones => "evicted_at",
        ArchiveTable::Drains => "updated_at",
        ArchiveTable::EventSteps | ArchiveTable::Deliveries | ArchiveTable::JobEntries => "",
    }
}

/// The tables whose rows leave with a row of `table`, keyed by its id.
pub fn linked(table: ArchiveTable) -> &'static [ArchiveTable] {
    match table {
        ArchiveTable::Events => &[
            ArchiveTable::Attempts,
            ArchiveTable::Payloads,
            ArchiveTable::EventSteps,
            ArchiveTable::Deliveries,
        ],
        ArchiveTable::Jobs => &[ArchiveTable::JobEntries],
        _ => &[],
    }
}

/// What a row of `table` swept on its own must satisfy besides its age,
/// as a SQL condition over `{table}.…`: its state, and that nothing still
/// in D1 holds it. `event_steps`, `deliveries` and `job_entries` never go
/// alone.
pub fn alone(table: ArchiveTable) -> String {
    match table {
        ArchiveTable::Events => format!(
            "NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = events.event_id AND {}) \
             AND (events.routed_at IS NOT NULL OR {})",
            in_states("d.state", UNSWEPT_DELIVERY.iter().map(|s| s.as_str())),
            in_states(
                "events.delivery_status",
                SWEEPABLE_DELIVERY.iter().map(|s| s.as_str()),
            )
        ),
        ArchiveTable::Attempts => "(attempts.event_id IS NULL OR NOT EXISTS \
             (SELECT 1 FROM events e WHERE e.event_id = attempts.event_id))"
            .into(),
        ArchiveTable::Payloads => format!(
            "NOT EXISTS (SELECT 1 FROM events e WHERE e.event_id = payloads.event_id) AND {}",
            with_parent(ArchiveTable::Payloads)
        ),
        ArchiveTable::DeadLetters => in_states(
            "dead_letters.status",
            RESOLVED_ENTRY.iter().map(|s| s.as_str()),
        ),
        ArchiveTable::Jobs => in_states("jobs.status", FINISHED_JOB.iter().map(|s| s.as_str())),
        // A legacy parked event names its destination in
        // `parked_destination` (what today's drains are keyed by) and is
        // read as its source's delivery (`deliveries::legacy`): either keeps
        // the drain. Each branch is served by an index (`deliveries_parked`,
        // `events_parked`, `events_by_source_time`), and drains are few.
        ArchiveTable::Drains => format!(
            "NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.destination = drains.destination AND d.state = '{}') \
             AND NOT EXISTS (SELECT 1 FROM events e WHERE e.parked_destination = drains.destination AND e.delivery_status = '{parked}') \
             AND NOT EXISTS (SELECT 1 FROM events e WHERE e.source = drains.destination AND e.routed_at IS NULL AND e.delivery_status = '{parked}')",
            DeliveryState::Parked.as_str(),
            parked = DeliverySummary::Parked.as_str()
        ),
        // Age alone: an episode resolved for the alarms' age owes no alert
        // any more (`alarms::machine::Owing` gives up at the same age), so
        // an undelivered one, or one never owed, does not pile up.
        ArchiveTable::Alarms => format!("alarms.state = '{}'", AlarmState::Resolved.as_str()),
        ArchiveTable::Audit | ArchiveTable::Tombstones => "1".into(),
        ArchiveTable::EventSteps | ArchiveTable::Deliveries | ArchiveTable::JobEntries => {
            "0".into()
        }
    }
}

/// What a row of `table` leaving with its parent (an event, a job) must
/// satisfy: a claim-checked body a dead letter in D1 still refers to stays
/// (the entry's envelope needs it; `dead_letters_by_event`, migration 0011).
pub fn with_parent(table: ArchiveTable) -> String {
    match table {
        ArchiveTable::Payloads => {
            "NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.event_id = payloads.event_id)".into()
        }
        _ => "1".into(),
    }
}

fn in_states<'a>(column: &str, states: impl Iterator<Item = &'a str>) -> String {
    let list: Vec<String> = states.map(|s| format!("'{s}'")).collect();
    format!("{column} IN ({})", list.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The states a condition names, as written.
    fn named(condition: &str, all: &[&str]) -> Vec<String> {
        all.iter()
            .filter(|s| condition.contains(&format!("'{s}'")))
            .map(|s| s.to_string())
            .collect()
    }

    #[test]
    fn nothing_in_use_is_ever_named_sweepable() {
        // An event: no delivery row in a state that owes a call, and a
        // legacy event's own column in a final one.
        let events = alone(ArchiveTable::Events);
        let (rows, legacy) = events
            .split_once("events.routed_at IS NOT NULL OR")
            .unwrap();
        let states: Vec<&str> = DeliveryState::ALL.iter().map(|s| s.as_str()).collect();
        assert!(rows.starts_with("NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = events.event_id AND d.state IN"));
        assert_eq!(named(rows, &states), ["pending", "delivering", "parked"]);
        let statuses: Vec<&str> = DeliverySummary::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(
            named(legacy, &statuses),
            ["none", "delivered", "failed", "filtered"]
        );
        let entries: Vec<&str> = EntryStatus::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(
            named(&alone(ArchiveTable::DeadLetters), &entries),
            ["replayed", "poisoned", "archived", "discarded"]
        );
        let jobs: Vec<&str> = JobStatus::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(
            named(&alone(ArchiveTable::Jobs), &jobs),
            ["completed", "aborted", "cancelled"]
        );
    }

    #[test]
    fn each_table_says_what_holds_its_rows() {
        use ArchiveTable as T;
        let table: [(T, &[&str]); 8] = [
            (
                T::Attempts,
                &["FROM events e WHERE e.event_id = attempts.event_id"],
            ),
            (
                T::Payloads,
                &[
                    "FROM events e WHERE e.event_id = payloads.event_id",
                    "FROM dead_letters d WHERE d.event_id = payloads.event_id",
                ],
            ),
            (
                T::Drains,
                &[
                    "FROM deliveries d WHERE d.destination = drains.destination AND d.state = 'parked'",
                    "e.parked_destination = drains.destination AND e.delivery_status = 'parked'",
                    "e.source = drains.destination AND e.routed_at IS NULL AND e.delivery_status = 'parked'",
                ],
            ),
            (T::Alarms, &["alarms.state = 'resolved'"]),
            (T::Audit, &["1"]),
            (T::EventSteps, &["0"]),
            (T::Deliveries, &["0"]),
            (T::JobEntries, &["0"]),
        ];
        for (t, parts) in table {
            let c = alone(t);
            for p in parts {
                assert!(c.contains(p), "{t}: {c} lacks {p}");
            }
        }
        assert!(with_parent(T::Payloads).contains("dead_letters"));
        assert_eq!(with_parent(T::Attempts), "1");
        assert_eq!(with_parent(T::Deliveries), "1");
        assert!(linked(T::Events).contains(&T::Deliveries));
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

    #[test]
    fn a_claim_checked_body_outlives_a_short_event_retention_while_its_message_may_be_queued() {
        for (event_retention_ms, want) in [
            (2_000, CLAIM_HOLD_MS),
            (CLAIM_HOLD_MS - 1, CLAIM_HOLD_MS),
            (30 * 86_400_000, 30 * 86_400_000),
        ] {
            let cfg = RetentionConfig {
                event_retention_ms,
                ..RetentionConfig::default()
            };
            let rules = age_rules(&cfg);
            let payloads = rules.iter().find(|r| r.table == ArchiveTable::Payloads);
            assert_eq!(
                payloads.map(|r| r.age_ms),
                Some(want),
                "{event_retention_ms}"
            );
        }
    }
}
