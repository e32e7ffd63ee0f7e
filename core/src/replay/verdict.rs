//! What one replay came to, and what a run does about it.
//!
//! The pipeline reports how ingest and the downstream call went; these
//! rules turn that into the replay's verdict, the audited outcome, and
//! whether a replay-all run must stop.

use crate::retry::disposition::Outcome;
use crate::state::error_code::{ErrorCode, Failure};
use crate::state::{DownstreamResult, EntryStatus, ReplayOutcome};

/// The verdict of one replay: `Ok` when the event is safely where it should
/// be, else the failure to record. An event another isolate is delivering
/// right now is not known to be delivered, so it is a failure the operator
/// can retry, never a success.
pub fn verdict(outcome: &Outcome, downstream: DownstreamResult) -> Result<(), Failure> {
    match (outcome, downstream) {
        (Outcome::Failed(f), _) => Err(f.clone()),
        // A replay never parks (`parking::Caller::Replay`); were it to, the
        // event was not delivered, so it is no success.
        (Outcome::Parked, _) | (_, DownstreamResult::Parked) => Err(Failure::new(
            ErrorCode::CircuitOpen,
            "the event was parked behind its destination's open breaker, not delivered; it drains when the destination recovers",
        )),
        (_, DownstreamResult::InFlightElsewhere) => Err(Failure::new(
            ErrorCode::Unknown,
            "another worker is delivering this event right now; replay again later",
        )),
        _ => Ok(()),
    }
}

/// Whether an entry's code says it failed at its downstream (not at ingest).
pub fn failed_downstream(entry_code: ErrorCode) -> bool {
    matches!(
        entry_code,
        ErrorCode::Upstream5xx
            | ErrorCode::Upstream4xx
            | ErrorCode::Timeout
            | ErrorCode::RateLimited
            | ErrorCode::AuthExpired
            | ErrorCode::UpstreamRedirect
            | ErrorCode::CircuitOpen
    )
}

/// Why a replay must be refused before anything is done, if it must: the
/// relay does not know the source any more, or the entry failed at its
/// downstream and the source no longer forwards (a "success" would then
/// mean nothing was delivered).
pub fn refusal(
    source: &str,
    known_source: bool,
    forwards: bool,
    entry_code: ErrorCode,
) -> Option<String> {
    if !known_source {
        return Some(format!(
            "source '{source}' is not configured in the relay's SOURCES, so this event cannot be replayed; add the source back, or archive the entry"
        ));
    }
    (failed_downstream(entry_code) && !forwards).then(|| format!(
        "this entry failed at its downstream ({entry_code}), but source '{source}' has no downstream configured in the relay any more; replaying would deliver nothing. Configure the downstream in SOURCES, or archive the entry"
    ))
}

/// The audited outcome, from the verdict and the entry's status after it.
pub fn outcome_of(succeeded: bool, status_after: EntryStatus) -> ReplayOutcome {
    match (succeeded, status_after) {
        (true, _) => ReplayOutcome::Succeeded,
        (false, EntryStatus::Poisoned) => ReplayOutcome::Poisoned,
        (false, _) => ReplayOutcome::Failed,
    }
}

/// Whether a finished batch stops the run: a canary batch with any entry
/// that did not succeed. Past the canary, one failing entry never stops
/// the rest.
pub fn stops_run(is_canary: bool, outcomes: &[ReplayOutcome]) -> bool {
    is_canary && outcomes.iter().any(|o| !o.succeeded())
}

#[cfg(test)]
mod tests {
    use super::*;
    use DownstreamResult::*;

    #[test]
    fn the_verdict_follows_the_outcome_and_the_downstream() {
        let failed = Outcome::Failed(Failure::new(ErrorCode::Upstream5xx, "503"));
        let table = [
            (Outcome::Ingested, NotForwarded, None),
            (Outcome::Duplicate, AlreadyDelivered, None),
            (Outcome::Ingested, Delivered, None),
            (
                Outcome::Duplicate,
                InFlightElsewhere,
                Some(ErrorCode::Unknown),
            ),
            (failed.clone(), Failed, Some(ErrorCode::Upstream5xx)),
            (failed, NotForwarded, Some(ErrorCode::Upstream5xx)),
        ];
        for (outcome, downstream, want) in table {
            let got = verdict(&outcome, downstream).err().map(|f| f.code);
            assert_eq!(got, want, "{outcome:?} / {downstream:?}");
        }
    }

    #[test]
    fn a_replay_is_refused_when_it_could_not_deliver() {
        use ErrorCode::*;
        let table = [
            (true, true, Upstream5xx, false),
            (true, false, Upstream5xx, true),
            (true, false, Upstream4xx, true),
            (true, false, CircuitOpen, true),
            (true, false, SchemaMismatch, false),
            (true, false, D1Unavailable, false),
            (false, true, Upstream5xx, true),
            (false, false, BadPayload, true),
        ];
        for (known, forwards, code, refused) in table {
            let got = refusal("s", known, forwards, code);
            assert_eq!(got.is_some(), refused, "{known} {forwards} {code}");
        }
    }

    #[test]
    fn the_audited_outcome_names_a_poisoning() {
        let table = [
            (true, EntryStatus::Replayed, ReplayOutcome::Succeeded),
            (false, EntryStatus::Pending, ReplayOutcome::Failed),
            (false, EntryStatus::Poisoned, ReplayOutcome::Poisoned),
        ];
        for (ok, status, want) in table {
            assert_eq!(outcome_of(ok, status), want);
        }
    }

    #[test]
    fn only_a_failing_canary_batch_stops_the_run() {
        use ReplayOutcome::*;
        let table: [(bool, &[ReplayOutcome], bool); 5] = [
            (true, &[Succeeded, Succeeded], false),
            (true, &[Succeeded, Failed], true),
            (true, &[Poisoned], true),
            (false, &[Failed, Failed], false),
            (true, &[], false),
        ];
        for (canary, outcomes, want) in table {
            assert_eq!(stops_run(canary, outcomes), want, "{canary} {outcomes:?}");
        }
    }
}
