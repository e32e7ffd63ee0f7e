//! What a job does once a step has handled its slice: the canary's pass and
//! fail rules, and when the job is finished. The DLQ worker reads the
//! canary's outcomes and whether entries remain, asks here, and applies the
//! answer as one fenced transition.

use super::lifecycle::Event;
use super::Approval;
use crate::state::JobEntryOutcome;

/// How a slice ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SliceEnd {
    /// Another step follows; the job stays where it is.
    Continue,
    /// A canary entry failed: the job aborts with `reason`, and nothing
    /// past the canary is touched.
    CanaryFailed {
        /// The abort reason, naming the entry and what to do next.
        reason: String,
    },
    /// Every canary entry is done and none failed: the job goes on, or
    /// waits for approval.
    CanaryPassed,
    /// No entry of the set remains: the job is done.
    Finished,
}

/// The end of a canary step, from each canary entry's outcome (`None`
/// while pending). The first failed entry decides; a canary with pending
/// entries continues.
pub fn after_canary(canary: &[(&str, Option<JobEntryOutcome>)]) -> SliceEnd {
    if let Some((entry_id, _)) = canary
        .iter()
        .find(|(_, o)| *o == Some(JobEntryOutcome::Failed))
    {
        return SliceEnd::CanaryFailed {
            reason: format!("canary entry {entry_id} failed, so nothing past the canary was touched; read its audit record, fix the cause, then create a new job"),
        };
    }
    if canary.iter().all(|(_, o)| o.is_some()) {
        return SliceEnd::CanaryPassed;
    }
    SliceEnd::Continue
}

/// The end of a step past the canary: finished once a step took nothing
/// or no pending entry remains.
pub fn after_run(taken: usize, pending_left: bool) -> SliceEnd {
    if taken == 0 || !pending_left {
        SliceEnd::Finished
    } else {
        SliceEnd::Continue
    }
}

impl SliceEnd {
    /// The lifecycle event this end is, if the job moves (`approve` says
    /// whether a passed canary waits).
    pub fn event(&self, approve: Approval) -> Option<Event> {
        match self {
            SliceEnd::Continue => None,
            SliceEnd::CanaryFailed { .. } => Some(Event::CanaryFailed),
            SliceEnd::CanaryPassed => Some(Event::CanaryPassed {
                auto: approve == Approval::Auto,
            }),
            SliceEnd::Finished => Some(Event::Finished),
        }
    }

    /// What the job records about its canary: failed, passed, or nothing.
    pub fn canary_passed(&self) -> Option<bool> {
        match self {
            SliceEnd::CanaryFailed { .. } => Some(false),
            SliceEnd::CanaryPassed => Some(true),
            SliceEnd::Continue | SliceEnd::Finished => None,
        }
    }

    /// The abort reason it records, if any.
    pub fn abort_reason(&self) -> Option<&str> {
        match self {
            SliceEnd::CanaryFailed { reason } => Some(reason),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use JobEntryOutcome::*;

    /// `Err(id)`: the canary fails, naming entry `id`.
    type Want = Result<SliceEnd, &'static str>;
    /// Each canary entry and its outcome so far.
    type Canary<'a> = &'a [(&'a str, Option<JobEntryOutcome>)];

    #[test]
    fn a_canary_fails_on_its_first_failed_entry_passes_when_all_are_done_and_otherwise_continues() {
        let table: [(Canary, Want); 7] = [
            (
                &[("a", Some(Succeeded)), ("b", Some(Succeeded))],
                Ok(SliceEnd::CanaryPassed),
            ),
            (
                &[("a", Some(Deduped)), ("b", Some(Skipped))],
                Ok(SliceEnd::CanaryPassed),
            ),
            (
                &[("a", Some(Succeeded)), ("b", None)],
                Ok(SliceEnd::Continue),
            ),
            (&[("a", None), ("b", None)], Ok(SliceEnd::Continue)),
            (&[("a", Some(Succeeded)), ("b", Some(Failed))], Err("b")),
            (&[("a", Some(Failed)), ("b", Some(Failed))], Err("a")),
            (&[("a", None), ("b", Some(Failed))], Err("b")),
        ];
        for (canary, want) in table {
            let got = after_canary(canary);
            match want {
                Ok(end) => assert_eq!(got, end, "{canary:?}"),
                Err(id) => {
                    let reason = got.abort_reason().expect("a failed canary has a reason");
                    assert!(
                        reason.starts_with(&format!("canary entry {id} failed")),
                        "{canary:?}: {reason}"
                    );
                    assert!(reason.contains("create a new job"), "{reason}");
                }
            }
        }
    }

    #[test]
    fn a_run_finishes_when_a_step_took_nothing_or_nothing_is_left() {
        let table = [
            (0, false, SliceEnd::Finished),
            (0, true, SliceEnd::Finished),
            (5, false, SliceEnd::Finished),
            (5, true, SliceEnd::Continue),
        ];
        for (taken, pending_left, want) in table {
            assert_eq!(
                after_run(taken, pending_left),
                want,
                "{taken} {pending_left}"
            );
        }
    }

    #[test]
    fn each_end_is_its_event_and_records_the_canary() {
        let failed = SliceEnd::CanaryFailed { reason: "r".into() };
        let table = [
            (SliceEnd::Continue, Approval::Auto, None, None, None),
            (
                failed,
                Approval::Auto,
                Some(Event::CanaryFailed),
                Some(false),
                Some("r"),
            ),
            (
                SliceEnd::CanaryPassed,
                Approval::Auto,
                Some(Event::CanaryPassed { auto: true }),
                Some(true),
                None,
            ),
            (
                SliceEnd::CanaryPassed,
                Approval::Manual,
                Some(Event::CanaryPassed { auto: false }),
                Some(true),
                None,
            ),
            (
                SliceEnd::Finished,
                Approval::Manual,
                Some(Event::Finished),
                None,
                None,
            ),
        ];
        for (end, approve, event, passed, reason) in table {
            assert_eq!(end.event(approve), event, "{end:?}");
            assert_eq!(end.canary_passed(), passed, "{end:?}");
            assert_eq!(end.abort_reason(), reason, "{end:?}");
        }
    }
}
