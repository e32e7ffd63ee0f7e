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

/// One entry's turn in a run (a job step, a replay-all call).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn<T> {
    /// Done: its outcome is recorded.
    Done(T),
    /// Its destination was over its `rate_per_s` (the relay answered
    /// `RATE_LIMITED`): nothing changed, the entry stays pending, is not
    /// attempted (never `failed`) and is taken again later.
    OverRate,
}

/// How a run goes on after a batch (jobs and replay-all alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterBatch {
    /// On to the next batch.
    Next,
    /// A canary entry failed: the run stops, nothing past the canary.
    CanaryFailed,
    /// An entry met its destination's rate: the run goes no further now,
    /// and continues from that entry later (the job's next step, the
    /// replay-all cursor). A rate refusal never fails a canary.
    OverRate,
}

/// What a finished batch means for the run: a canary batch with an entry
/// that was done and failed stops it; any entry over its rate pauses it.
/// Past the canary, one failing entry never stops the rest.
pub fn after_batch<T>(
    is_canary: bool,
    turns: &[Turn<T>],
    failed: impl Fn(&T) -> bool,
) -> AfterBatch {
    let done_and_failed = turns
        .iter()
        .any(|t| matches!(t, Turn::Done(o) if failed(o)));
    if is_canary && done_and_failed {
        AfterBatch::CanaryFailed
    } else if turns.iter().any(|t| matches!(t, Turn::OverRate)) {
        AfterBatch::OverRate
    } else {
        AfterBatch::Next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DownstreamResult::*;

    #[test]
    fn a_rate_refusal_pauses_a_run_and_never_fails_its_canary() {
        use ReplayOutcome::{Failed as F, Succeeded as S};
        let failed = |o: &ReplayOutcome| !o.succeeded();
        let table: [(bool, Vec<Turn<ReplayOutcome>>, AfterBatch); 7] = [
            (true, vec![Turn::Done(S), Turn::Done(S)], AfterBatch::Next),
            (
                true,
                vec![Turn::Done(S), Turn::Done(F)],
                AfterBatch::CanaryFailed,
            ),
            (false, vec![Turn::Done(F)], AfterBatch::Next),
            (
                true,
                vec![Turn::Done(S), Turn::OverRate],
                AfterBatch::OverRate,
            ),
            (
                true,
                vec![Turn::OverRate, Turn::OverRate],
                AfterBatch::OverRate,
            ),
            (
                false,
                vec![Turn::Done(F), Turn::OverRate],
                AfterBatch::OverRate,
            ),
            (
                true,
                vec![Turn::OverRate, Turn::Done(F)],
                AfterBatch::CanaryFailed,
            ),
        ];
        for (canary, turns, want) in table {
            assert_eq!(
                after_batch(canary, &turns, failed),
                want,
                "{canary} {turns:?}"
            );
        }
    }

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
            let turns: Vec<Turn<ReplayOutcome>> = outcomes.iter().map(|o| Turn::Done(*o)).collect();
            let stops = after_batch(canary, &turns, |o| !o.succeeded()) == AfterBatch::CanaryFailed;
            assert_eq!(stops, want, "{canary} {outcomes:?}");
        }
    }
}
