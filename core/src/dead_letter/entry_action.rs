//! The actions on one dead-letter entry besides replay (archive, unarchive
//! and discard) and the status transition each makes. The single-entry
//! routes and jobs both apply them through `dlq/src/entries/apply_action.rs`.
//! [`entry_actions`] answers what an entry's status allows, replay
//! included, from the same guards the routes apply.

use crate::metrics::MetricName;
use crate::replay::plan::check_replayable;
use crate::state::{AuditAction, EntryStatus, JobAction};

/// An action on one entry besides replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryAction {
    /// Keep it as history: out of the depth, the alarms, replay-all and jobs.
    Archive,
    /// Back to pending.
    Unarchive,
    /// Terminal: its stored payload is erased; identity, evidence and audit stay.
    Discard,
}

impl EntryAction {
    /// The audit action it is recorded as.
    pub fn action(self) -> AuditAction {
        match self {
            EntryAction::Archive => AuditAction::Archive,
            EntryAction::Unarchive => AuditAction::Unarchive,
            EntryAction::Discard => AuditAction::Discard,
        }
    }

    /// The counter it is counted under.
    pub fn metric(self) -> MetricName {
        match self {
            EntryAction::Archive => MetricName::Archived,
            EntryAction::Unarchive => MetricName::Unarchived,
            EntryAction::Discard => MetricName::Discarded,
        }
    }

    /// Whether it erases the stored payload (the original event and the
    /// excerpt) along with the status change.
    pub fn erases_payload(self) -> bool {
        self == EntryAction::Discard
    }

    /// The action a job of `action` applies to each entry: none for a
    /// replay job, whose entries are replayed instead.
    pub fn of_job(action: JobAction) -> Option<EntryAction> {
        match action {
            JobAction::Archive => Some(EntryAction::Archive),
            JobAction::Discard => Some(EntryAction::Discard),
            JobAction::Replay => None,
        }
    }

    /// Parses a route segment (`archive`, `unarchive`, `discard`).
    pub fn parse(segment: &str) -> Option<EntryAction> {
        match segment {
            "archive" => Some(EntryAction::Archive),
            "unarchive" => Some(EntryAction::Unarchive),
            "discard" => Some(EntryAction::Discard),
            _ => None,
        }
    }
}

/// The status after `action` on an entry in `status`, or the 409 message.
pub fn next_status(status: EntryStatus, action: EntryAction) -> Result<EntryStatus, String> {
    use EntryStatus::*;
    match (action, status) {
        (EntryAction::Archive, Pending | Poisoned) => Ok(Archived),
        (EntryAction::Archive, Archived) => Err("this entry is already archived".into()),
        (EntryAction::Archive, Replayed) => {
            Err("this entry was replayed successfully; it is already kept as history".into())
        }
        (EntryAction::Unarchive, Archived) => Ok(Pending),
        (EntryAction::Unarchive, other) => Err(format!(
            "only an archived entry can be unarchived; this one is {other}"
        )),
        (EntryAction::Discard, Discarded) | (_, Discarded) => {
            Err("this entry was discarded; it is terminal and its payload is gone".into())
        }
        (EntryAction::Discard, _) => Ok(Discarded),
    }
}

/// What an entry in `status` allows now (its `"actions"`): exactly the
/// actions whose route guard lets it through ([`check_replayable`] for
/// replay, [`next_status`] for the others), so the rule has one home and a
/// client never holds a copy. A replay depends on the status alone: an
/// entry reaching `max_replay_attempts` stops being pending (it is
/// `poisoned`). Restore is a tombstone's (`retention::restore`).
pub fn entry_actions(status: EntryStatus) -> Vec<AuditAction> {
    let replay = check_replayable(status)
        .is_ok()
        .then_some(AuditAction::Replay);
    let others = [
        EntryAction::Archive,
        EntryAction::Unarchive,
        EntryAction::Discard,
    ]
    .into_iter()
    .filter(|a| next_status(status, *a).is_ok())
    .map(EntryAction::action);
    replay.into_iter().chain(others).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use EntryStatus::*;

    #[test]
    fn every_decision_from_every_status() {
        let table = [
            (Pending, EntryAction::Archive, Some(Archived)),
            (Poisoned, EntryAction::Archive, Some(Archived)),
            (Archived, EntryAction::Archive, None),
            (Replayed, EntryAction::Archive, None),
            (Discarded, EntryAction::Archive, None),
            (Archived, EntryAction::Unarchive, Some(Pending)),
            (Pending, EntryAction::Unarchive, None),
            (Replayed, EntryAction::Unarchive, None),
            (Poisoned, EntryAction::Unarchive, None),
            (Discarded, EntryAction::Unarchive, None),
            (Pending, EntryAction::Discard, Some(Discarded)),
            (Archived, EntryAction::Discard, Some(Discarded)),
            (Poisoned, EntryAction::Discard, Some(Discarded)),
            (Replayed, EntryAction::Discard, Some(Discarded)),
            (Discarded, EntryAction::Discard, None),
        ];
        for (from, decision, want) in table {
            assert_eq!(
                next_status(from, decision).ok(),
                want,
                "{from} {decision:?}"
            );
        }
    }

    #[test]
    fn the_actions_each_status_allows() {
        use AuditAction as A;
        let table: [(EntryStatus, &[AuditAction]); 5] = [
            (Pending, &[A::Replay, A::Archive, A::Discard]),
            (Replayed, &[A::Discard]),
            (Poisoned, &[A::Archive, A::Discard]),
            (Archived, &[A::Unarchive, A::Discard]),
            (Discarded, &[]),
        ];
        assert_eq!(table.len(), EntryStatus::ALL.len(), "every status");
        for (status, want) in table {
            assert_eq!(entry_actions(status), want, "{status}");
        }
    }

    #[test]
    fn route_segments_parse_to_decisions() {
        for d in [
            EntryAction::Archive,
            EntryAction::Unarchive,
            EntryAction::Discard,
        ] {
            assert_eq!(EntryAction::parse(d.action().as_str()), Some(d));
        }
        assert_eq!(EntryAction::parse("replay"), None);
    }

    #[test]
    fn a_job_archives_or_discards_each_entry_and_a_replay_job_does_neither() {
        let table = [
            (JobAction::Archive, Some(EntryAction::Archive)),
            (JobAction::Discard, Some(EntryAction::Discard)),
            (JobAction::Replay, None),
        ];
        for (job, want) in table {
            assert_eq!(EntryAction::of_job(job), want, "{job:?}");
        }
    }

    #[test]
    fn each_decision_has_its_own_counter_and_only_discard_erases() {
        let table = [
            (EntryAction::Archive, MetricName::Archived, false),
            (EntryAction::Unarchive, MetricName::Unarchived, false),
            (EntryAction::Discard, MetricName::Discarded, true),
        ];
        for (d, metric, erases) in table {
            assert_eq!((d.metric(), d.erases_payload()), (metric, erases), "{d:?}");
        }
    }
}
