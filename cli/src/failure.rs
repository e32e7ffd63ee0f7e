//! Why a command stopped, and what to do next: every error the CLI prints
//! says both, and maps to its exit status (1 the operation failed, 2 a
//! usage error). A failure never holds a token: callers word it from what
//! went wrong, never from the request they sent.

use std::fmt;

/// Which exit status a failure means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The command was typed wrong, or its input cannot be used: exit 2.
    Usage,
    /// The operation failed, or found a problem: exit 1.
    Failed,
}

/// A command's failure: what went wrong, and what to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Its exit status.
    pub kind: Kind,
    /// What went wrong.
    pub what: String,
    /// What to do next.
    pub next: String,
}

impl Failure {
    /// A usage error (exit 2).
    pub fn usage(what: impl Into<String>, next: impl Into<String>) -> Failure {
        Failure {
            kind: Kind::Usage,
            what: what.into(),
            next: next.into(),
        }
    }

    /// A failed operation (exit 1).
    pub fn failed(what: impl Into<String>, next: impl Into<String>) -> Failure {
        Failure {
            kind: Kind::Failed,
            what: what.into(),
            next: next.into(),
        }
    }

    /// The process's exit status for it.
    pub fn exit_code(&self) -> i32 {
        match self.kind {
            Kind::Usage => 2,
            Kind::Failed => 1,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: {}\n  next: {}", self.what, self.next)
    }
}

/// A command's result: done (exit 0), or done and found a problem (exit
/// 1, already reported), or a failure to report.
pub type Outcome = Result<Done, Failure>;

/// How a command that ran to its end went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Done {
    /// Exit 0.
    Ok,
    /// Exit 1: a problem found and already printed (a signature that does
    /// not verify, a job that aborted, a configuration error).
    Problem,
}

impl Done {
    /// The process's exit status.
    pub fn exit_code(self) -> i32 {
        match self {
            Done::Ok => 0,
            Done::Problem => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_failure_says_what_and_next_and_maps_to_its_status() {
        let usage = Failure::usage(
            "--since \"x\" is not a time",
            "give 2h or an RFC 3339 instant",
        );
        assert_eq!(usage.exit_code(), 2);
        assert_eq!(
            usage.to_string(),
            "error: --since \"x\" is not a time\n  next: give 2h or an RFC 3339 instant"
        );
        assert_eq!(Failure::failed("a", "b").exit_code(), 1);
        assert_eq!((Done::Ok.exit_code(), Done::Problem.exit_code()), (0, 1));
    }
}
