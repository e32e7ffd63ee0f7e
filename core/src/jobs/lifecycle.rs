//! How a job moves through its states. Every transition an operator or a
//! step can ask for is here, and every one not listed is refused; the
//! commands a job answers as its `actions` are the ones [`next`] accepts.

use crate::state::{JobCommand, JobStatus};

/// Something that happens to a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Its first step ran: `has_canary` says where it goes.
    Started {
        /// Whether the job has canary entries.
        has_canary: bool,
    },
    /// Every canary entry succeeded; `auto` says whether it waits.
    CanaryPassed {
        /// `approve: "auto"`.
        auto: bool,
    },
    /// A canary entry failed.
    CanaryFailed,
    /// The abort threshold was crossed.
    ThresholdCrossed,
    /// No entry remains.
    Finished,
    /// `POST …/approve`.
    Approve,
    /// `POST …/pause`.
    Pause,
    /// `POST …/resume`; `canary_done` says whether the canary already passed.
    Resume {
        /// The canary has finished (or there is none).
        canary_done: bool,
    },
    /// `POST …/cancel`.
    Cancel,
}

impl Event {
    /// The event an operator's command asks for; `canary_done` says where
    /// a resume goes (it never decides whether a resume is accepted).
    pub fn of_command(command: JobCommand, canary_done: bool) -> Event {
        match command {
            JobCommand::Approve => Event::Approve,
            JobCommand::Pause => Event::Pause,
            JobCommand::Resume => Event::Resume { canary_done },
            JobCommand::Cancel => Event::Cancel,
        }
    }
}

/// The commands a job in `status` takes now (a job's `"actions"`): exactly
/// those [`next`] accepts, the rule the steering routes apply, so a client
/// never holds a copy of it.
pub fn commands(status: JobStatus) -> Vec<JobCommand> {
    JobCommand::ALL
        .iter()
        .copied()
        .filter(|c| next(status, Event::of_command(*c, true)).is_ok())
        .collect()
}

/// The status after `event`, or why it cannot happen now (the 409 message).
pub fn next(status: JobStatus, event: Event) -> Result<JobStatus, String> {
    use Event::*;
    use JobStatus::*;
    let to = match (status, event) {
        (Queued, Started { has_canary: true }) => Canary,
        (Queued, Started { has_canary: false }) => Running,
        (Canary, CanaryPassed { auto: true }) => Running,
        (Canary, CanaryPassed { auto: false }) => AwaitingApproval,
        (Canary, CanaryFailed) => Aborted,
        (Canary | Running, ThresholdCrossed) => Aborted,
        (Running, Finished) => Completed,
        (AwaitingApproval, Approve) => Running,
        (Queued | Canary | Running, Pause) => Paused,
        (Paused, Resume { canary_done: false }) => Canary,
        (Paused, Resume { canary_done: true }) => Running,
        (Queued | Canary | AwaitingApproval | Running | Paused, Cancel) => Cancelled,
        (from, event) => return Err(refusal(from, event)),
    };
    Ok(to)
}

fn refusal(from: JobStatus, event: Event) -> String {
    let what = match event {
        Event::Approve => "approved: only a job awaiting approval after its canary can be",
        Event::Pause => "paused: only a queued, canary or running job can be",
        Event::Resume { .. } => "resumed: only a paused job can be",
        Event::Cancel => "cancelled: it has already finished",
        _ => "moved on by a step in this state",
    };
    format!("this job is {from} and cannot be {what}")
}

/// Whether a job in `status` has finished for good.
pub fn is_final(status: JobStatus) -> bool {
    matches!(
        status,
        JobStatus::Completed | JobStatus::Aborted | JobStatus::Cancelled
    )
}

/// Whether a step of a job in `status` does work (the others only ack).
pub fn steps_run_in(status: JobStatus) -> bool {
    matches!(
        status,
        JobStatus::Queued | JobStatus::Canary | JobStatus::Running
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use Event::*;
    use JobStatus::*;

    #[test]
    fn every_transition_and_the_illegal_ones() {
        let table = [
            (Queued, Started { has_canary: true }, Some(Canary)),
            (Queued, Started { has_canary: false }, Some(Running)),
            (Canary, CanaryPassed { auto: false }, Some(AwaitingApproval)),
            (Canary, CanaryPassed { auto: true }, Some(Running)),
            (Canary, CanaryFailed, Some(Aborted)),
            (Running, ThresholdCrossed, Some(Aborted)),
            (Canary, ThresholdCrossed, Some(Aborted)),
            (Running, Finished, Some(Completed)),
            (AwaitingApproval, Approve, Some(Running)),
            (Running, Pause, Some(Paused)),
            (Canary, Pause, Some(Paused)),
            (Queued, Pause, Some(Paused)),
            (Paused, Resume { canary_done: true }, Some(Running)),
            (Paused, Resume { canary_done: false }, Some(Canary)),
            (Running, Cancel, Some(Cancelled)),
            (Paused, Cancel, Some(Cancelled)),
            (AwaitingApproval, Cancel, Some(Cancelled)),
            // Illegal.
            (Running, Approve, None),
            (Queued, Approve, None),
            (AwaitingApproval, Pause, None),
            (Running, Resume { canary_done: true }, None),
            (Completed, Cancel, None),
            (Aborted, Resume { canary_done: true }, None),
            (Cancelled, Pause, None),
            (Completed, Started { has_canary: false }, None),
            (Paused, Finished, None),
            (AwaitingApproval, CanaryFailed, None),
        ];
        for (from, event, want) in table {
            let got = next(from, event);
            assert_eq!(got.clone().ok(), want, "{from} + {event:?}");
            if let Err(message) = got {
                assert!(message.contains(from.as_str()), "{message}");
            }
        }
    }

    #[test]
    fn the_commands_each_status_takes() {
        use JobCommand as C;
        let table: [(JobStatus, &[JobCommand]); 8] = [
            (Queued, &[C::Pause, C::Cancel]),
            (Canary, &[C::Pause, C::Cancel]),
            (AwaitingApproval, &[C::Approve, C::Cancel]),
            (Running, &[C::Pause, C::Cancel]),
            (Paused, &[C::Resume, C::Cancel]),
            (Completed, &[]),
            (Aborted, &[]),
            (Cancelled, &[]),
        ];
        assert_eq!(table.len(), JobStatus::ALL.len(), "every status");
        for (status, want) in table {
            assert_eq!(commands(status), want, "{status}");
        }
    }

    #[test]
    fn a_command_is_taken_whatever_its_canary_and_as_the_route_applies_it() {
        for status in JobStatus::ALL {
            for command in JobCommand::ALL {
                let taken = commands(*status).contains(command);
                for canary_done in [false, true] {
                    let event = Event::of_command(*command, canary_done);
                    assert_eq!(
                        next(*status, event).is_ok(),
                        taken,
                        "{status} {command} {canary_done}"
                    );
                }
            }
        }
    }

    #[test]
    fn final_states_do_no_work() {
        for s in JobStatus::ALL {
            assert!(!(is_final(*s) && steps_run_in(*s)), "{s}");
        }
        assert!(steps_run_in(Running) && !steps_run_in(Paused) && !steps_run_in(AwaitingApproval));
    }
}
