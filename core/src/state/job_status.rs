//! A job's lifecycle (`jobs.status`) and the actions a job applies.

use super::named_states;

named_states! {
    /// Where a job stands.
    pub enum JobStatus ("job status") {
        /// Created; its first step is on the queue.
        Queued = "queued",
        /// Replaying its canary entries.
        Canary = "canary",
        /// The canary passed; waiting for `POST …/approve`.
        AwaitingApproval = "awaiting_approval",
        /// Working through its set.
        Running = "running",
        /// Stopped by an operator; `resume` continues it.
        Paused = "paused",
        /// Every entry handled.
        Completed = "completed",
        /// Stopped by its canary or its abort threshold.
        Aborted = "aborted",
        /// Stopped by an operator for good.
        Cancelled = "cancelled",
    }
}

named_states! {
    /// What a job does to each entry of its set.
    pub enum JobAction ("job action") {
        /// Replay it through the relay.
        Replay = "replay",
        /// Archive it.
        Archive = "archive",
        /// Discard it (erase its payload).
        Discard = "discard",
    }
}

named_states! {
    /// An operator's command to a job (`POST /jobs/:id/{command}`), as the
    /// API's `actions` and the console's buttons name it.
    pub enum JobCommand ("job command") {
        /// Let a job whose canary passed run the rest.
        Approve = "approve",
        /// Stop it until `resume`.
        Pause = "pause",
        /// Continue a paused job.
        Resume = "resume",
        /// Stop it for good.
        Cancel = "cancel",
    }
}

named_states! {
    /// What happened to one entry of a job.
    pub enum JobEntryOutcome ("job entry outcome") {
        /// Done as asked.
        Succeeded = "succeeded",
        /// Tried and failed.
        Failed = "failed",
        /// Identical to an entry already replayed in this job.
        Deduped = "deduped",
        /// No longer eligible when its turn came.
        Skipped = "skipped",
    }
}

named_states! {
    /// Where one entry of a job's set stands (`job_entries.state`).
    pub enum JobEntryState ("job entry state") {
        /// Its turn has not come (or its step failed before recording it).
        Pending = "pending",
        /// Handled; its outcome is recorded.
        Done = "done",
    }
}
