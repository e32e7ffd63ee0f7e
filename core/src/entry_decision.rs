//! The operator's decisions on one dead-letter entry besides replay:
//! archive, unarchive and discard, as status transitions.

use crate::metrics::MetricName;
use crate::state::{AuditAction, EntryStatus};

/// A decision on one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Keep it as history: out of the depth, the alarms, replay-all and jobs.
    Archive,
    /// Back to pending.
    Unarchive,
    /// Terminal: its stored payload is erased; identity, evidence and audit stay.
    Discard,
}

impl Decision {
    /// The audit action it is recorded as.
    pub fn action(self) -> AuditAction {
        match self {
            Decision::Archive => AuditAction::Archive,
            Decision::Unarchive => AuditAction::Unarchive,
            Decision::Discard => AuditAction::Discard,
        }
    }

    /// The counter it is counted under.
    pub fn metric(self) -> MetricName {
        match self {
            Decision::Archive => MetricName::Archived,
            Decision::Unarchive => MetricName::Unarchived,
            Decision::Discard => MetricName::Discarded,
        }
    }

    /// Whether it erases the stored payload (the original event and the
    /// excerpt) along with the status change.
    pub fn erases_payload(self) -> bool {
        self == Decision::Discard
    }

    /// Parses a route segment (`archive`, `unarchive`, `discard`).
    pub fn parse(segment: &str) -> Option<Decision> {
        match segment {
            "archive" => Some(Decision::Archive),
            "unarchive" => Some(Decision::Unarchive),
            "discard" => Some(Decision::Discard),
            _ => None,
        }
    }
}

/// The status after `decision` on an entry in `status`, or the 409 message.
pub fn decide(status: EntryStatus, decision: Decision) -> Result<EntryStatus, String> {
    use EntryStatus::*;
    match (decision, status) {
        (Decision::Archive, Pending | Poisoned) => Ok(Archived),
        (Decision::Archive, Archived) => Err("this entry is already archived".into()),
        (Decision::Archive, Replayed) => {
            Err("this entry was replayed successfully; it is already kept as history".into())
        }
        (Decision::Unarchive, Archived) => Ok(Pending),
        (Decision::Unarchive, other) => Err(format!(
            "only an archived entry can be unarchived; this one is {other}"
        )),
        (Decision::Discard, Discarded) | (_, Discarded) => {
            Err("this entry was discarded; it is terminal and its payload is gone".into())
        }
        (Decision::Discard, _) => Ok(Discarded),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use EntryStatus::*;

    #[test]
    fn every_decision_from_every_status() {
        let table = [
            (Pending, Decision::Archive, Some(Archived)),
            (Poisoned, Decision::Archive, Some(Archived)),
            (Archived, Decision::Archive, None),
            (Replayed, Decision::Archive, None),
            (Discarded, Decision::Archive, None),
            (Archived, Decision::Unarchive, Some(Pending)),
            (Pending, Decision::Unarchive, None),
            (Replayed, Decision::Unarchive, None),
            (Poisoned, Decision::Unarchive, None),
            (Discarded, Decision::Unarchive, None),
            (Pending, Decision::Discard, Some(Discarded)),
            (Archived, Decision::Discard, Some(Discarded)),
            (Poisoned, Decision::Discard, Some(Discarded)),
            (Replayed, Decision::Discard, Some(Discarded)),
            (Discarded, Decision::Discard, None),
        ];
        for (from, decision, want) in table {
            assert_eq!(decide(from, decision).ok(), want, "{from} {decision:?}");
        }
    }

    #[test]
    fn route_segments_parse_to_decisions() {
        for d in [Decision::Archive, Decision::Unarchive, Decision::Discard] {
            assert_eq!(Decision::parse(d.action().as_str()), Some(d));
        }
        assert_eq!(Decision::parse("replay"), None);
    }

    #[test]
    fn each_decision_has_its_own_counter_and_only_discard_erases() {
        let table = [
            (Decision::Archive, MetricName::Archived, false),
            (Decision::Unarchive, MetricName::Unarchived, false),
            (Decision::Discard, MetricName::Discarded, true),
        ];
        for (d, metric, erases) in table {
            assert_eq!((d.metric(), d.erases_payload()), (metric, erases), "{d:?}");
        }
    }
}
