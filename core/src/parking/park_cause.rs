//! Why a delivery was parked (`deliveries.park_cause`): the breaker of its
//! destination is open, its destination refused its credential or answered
//! a redirect, a drain of
//! its destination runs ahead of it, or its destination is over its
//! `rate_per_s` (DESIGN §3). Either way it spends no retry budget
//! and its destination's drain brings it out.

use crate::state::error_code::ErrorCode;

/// Why a delivery was parked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParkCause {
    /// The destination's breaker is open.
    Breaker,
    /// The destination refused its credential (401/403 with `auth`): the
    /// breaker's cause is `AUTH_EXPIRED`.
    Auth,
    /// The destination's drain is running: a new event queues behind the
    /// parked ones, so arrival order and the drain's rate hold.
    Drain,
    /// The destination is over its `rate_per_s`: no start was free within
    /// the consumer's short wait.
    Rate,
    /// The destination answered a redirect (3xx), which is not followed:
    /// the breaker's cause is `UPSTREAM_REDIRECT`, and its URL is wrong.
    Redirect,
}

impl ParkCause {
    /// `otherwise`, unless `cause` (the breaker's, or the drain's record of
    /// it) says the destination refused its credential or redirected.
    pub fn of_cause(cause: Option<ErrorCode>, otherwise: ParkCause) -> ParkCause {
        match cause {
            Some(ErrorCode::AuthExpired) => ParkCause::Auth,
            Some(ErrorCode::UpstreamRedirect) => ParkCause::Redirect,
            _ => otherwise,
        }
    }

    /// Its stored name (`deliveries.park_cause`).
    pub fn as_str(self) -> &'static str {
        match self {
            ParkCause::Breaker => "breaker",
            ParkCause::Auth => "auth",
            ParkCause::Drain => "drain",
            ParkCause::Rate => "rate",
            ParkCause::Redirect => "redirect",
        }
    }

    /// The event's story step, for destination `destination`, with what
    /// the call that parked it was answered (`answer`), when one was made.
    pub fn detail_after(self, destination: &str, answer: Option<&str>) -> String {
        match answer {
            Some(answer) => format!("{} ({answer})", self.detail(destination)),
            None => self.detail(destination),
        }
    }

    /// The event's story step, for destination `destination`.
    pub fn detail(self, destination: &str) -> String {
        match self {
            ParkCause::Breaker => format!("held while the breaker of {destination} is open"),
            ParkCause::Auth => format!("held: {destination} refused its credential (401/403); fix its DESTINATION_SECRET and the drain delivers it"),
            ParkCause::Drain => {
                format!("held behind the parked events of {destination}, which its drain delivers first")
            }
            ParkCause::Rate => {
                format!(
                    "held: {destination} is over its rate_per_s; its drain delivers it at the rate"
                )
            }
            ParkCause::Redirect => format!("held: {destination} answered a redirect (3xx), which is not followed; set its url in DESTINATIONS to where it now lives and the drain delivers it"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_credential_names_the_park_whatever_else_held_it() {
        use ParkCause::{Auth, Breaker, Drain, Rate, Redirect};
        let table = [
            (Some(ErrorCode::AuthExpired), Breaker, Auth),
            (Some(ErrorCode::AuthExpired), Drain, Auth),
            (Some(ErrorCode::UpstreamRedirect), Breaker, Redirect),
            (Some(ErrorCode::UpstreamRedirect), Drain, Redirect),
            (Some(ErrorCode::Upstream5xx), Breaker, Breaker),
            (Some(ErrorCode::Upstream5xx), Drain, Drain),
            (None, Breaker, Breaker),
            (None, Rate, Rate),
        ];
        for (cause, otherwise, want) in table {
            assert_eq!(
                ParkCause::of_cause(cause, otherwise),
                want,
                "{cause:?} {otherwise:?}"
            );
        }
    }

    #[test]
    fn each_cause_has_its_stored_name_and_words() {
        let table = [
            (ParkCause::Breaker, "breaker", "breaker of b is open"),
            (ParkCause::Auth, "auth", "b refused its credential"),
            (ParkCause::Drain, "drain", "behind the parked events of b"),
            (ParkCause::Rate, "rate", "b is over its rate_per_s"),
            (ParkCause::Redirect, "redirect", "b answered a redirect"),
        ];
        for (cause, name, words) in table {
            assert_eq!(cause.as_str(), name);
            assert!(cause.detail("b").contains(words), "{cause:?}");
            assert_eq!(cause.detail_after("b", None), cause.detail("b"));
        }
        let told = ParkCause::Redirect.detail_after("b", Some("downstream answered 301"));
        assert!(told.ends_with("(downstream answered 301)"), "{told}");
    }
}
