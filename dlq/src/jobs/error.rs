//! Why a job could not be created, read or steered: the jobs engine's own
//! error, which the admin API maps to its response with `From`.

/// Why a job request failed.
#[derive(Debug)]
pub enum JobError {
    /// No such job, or no such command.
    NotFound(String),
    /// The job is not in a status that allows the command, or it changed
    /// while the command ran.
    Conflict(String),
    /// The job changed in D1, but its next step could not be queued; it
    /// resumes on its own (the message says when).
    NotQueued(String),
    /// D1 failed or answered rows this version cannot read.
    Storage(worker::Error),
}

impl From<worker::Error> for JobError {
    fn from(e: worker::Error) -> Self {
        JobError::Storage(e)
    }
}

/// The result of a job request: the job's JSON view, or why not.
pub type JobResult = Result<serde_json::Value, JobError>;
