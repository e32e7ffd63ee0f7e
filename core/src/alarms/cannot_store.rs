//! The `dlq_cannot_store` alarm, kept out of D1 because D1 is what fails.
//!
//! Its whole state is one small JSON object in R2 ([`OBJECT_KEY`]), written
//! only with a conditional put (`onlyIf` the etag that was read, or "absent"
//! for the first write). Every writer (the relay's internal route that the
//! DLQ consumer calls when a store fails, and the relay's watchdog) reads
//! the object, asks [`plan`] for the next content, and puts it
//! conditionally; a lost race rereads and plans again. So:
//!
//! - the first failure of a condition opens one firing episode, and only the
//!   writer whose put created it holds the send lease: one alert however
//!   many isolates and queue retries report the failure;
//! - a later failure while firing only updates the figures;
//! - a POST that failed, or whose sender died before recording it, is sent
//!   again once the lease has passed ([`SEND_LEASE_MS`]), by the next report
//!   or the next watchdog run; the receiver can drop a repeat by
//!   `X-Operation-Id`;
//! - the watchdog resolves the episode when a probe of the DLQ worker's
//!   tables succeeds and no failure was reported for [`QUIET_MS`]; the
//!   `resolved` alert is then owed once, the same way.

use super::alert_payload::Alert;
use super::machine::{Delivery, MAX_ERROR_CHARS};
use super::AlarmId;
use crate::state::{AlarmKind, AlarmState};
use crate::UnixMillis;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The R2 key of the alarm's state.
pub const OBJECT_KEY: &str = "state/dlq_cannot_store.json";
/// How long one sender may hold the right to POST before another may.
pub const SEND_LEASE_MS: i64 = 60_000;
/// How long without a reported failure, with D1 answering, before the
/// episode resolves: longer than the DLQ consumer's first retry delays, so
/// a store that fails on every retry does not resolve between two of them.
pub const QUIET_MS: i64 = 120_000;
/// Reads and conditional puts lost to another writer before a writer gives
/// up (the next report or watchdog run plans again).
pub const WRITE_TRIES: usize = 3;

/// What the DLQ consumer reports when it cannot store a dead letter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreFailure {
    /// The stable code of the failure (e.g. `D1_UNAVAILABLE`).
    pub code: String,
    /// What D1 answered, truncated; never a secret (it is a D1 error text).
    pub message: String,
    /// The queue message that could not be stored.
    pub queue_message_id: String,
    /// Its source, when the message could be read.
    pub source: Option<String>,
}

/// The object's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CannotStoreState {
    /// Firing or resolved.
    pub state: AlarmState,
    /// When the episode started.
    pub since: UnixMillis,
    /// When it resolved.
    pub resolved_at: Option<UnixMillis>,
    /// The newest reported failure's time.
    pub last_failure_at: UnixMillis,
    /// Failures reported in this episode.
    pub failures: u64,
    /// The newest reported failure.
    pub last: StoreFailure,
    /// The last state the receiver acknowledged.
    pub sent: Option<AlarmState>,
    /// POSTs tried in this episode.
    pub attempts: u32,
    /// When the last POST was tried.
    pub last_attempt_at: Option<UnixMillis>,
    /// Why it failed.
    pub last_error: Option<String>,
    /// A sender holds the right to POST until then.
    pub sending_until: Option<UnixMillis>,
}

/// What happened, as seen by the writer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// The DLQ consumer could not store a dead letter.
    Failure(StoreFailure),
    /// A watchdog run; `store_ok` is whether its probe of the DLQ worker's
    /// tables succeeded.
    Watch {
        /// The probe answered.
        store_ok: bool,
    },
}

/// The write to make, and whether the writer, once its put wins, POSTs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The new content; `None`: write nothing.
    pub next: Option<CannotStoreState>,
    /// POST [`CannotStoreState::alert`] of `next` after the put wins.
    pub send: bool,
}

/// The next content of the object after `report` at `now`, from what was
/// read (`None`: no object yet).
pub fn plan(prev: Option<&CannotStoreState>, report: &Report, now: UnixMillis) -> Plan {
    let next = match (prev, report) {
        (Some(p), Report::Failure(f)) if p.state == AlarmState::Firing => Some(CannotStoreState {
            last_failure_at: now,
            failures: p.failures + 1,
            last: f.clone(),
            ..p.clone()
        }),
        (_, Report::Failure(f)) => Some(opened(f, now)),
        (Some(p), Report::Watch { store_ok: true })
            if p.state == AlarmState::Firing && now - p.last_failure_at >= QUIET_MS =>
        {
            Some(CannotStoreState {
                state: AlarmState::Resolved,
                resolved_at: Some(now),
                sending_until: None,
                ..p.clone()
            })
        }
        (Some(p), Report::Watch { .. }) => Some(p.clone()),
        (None, Report::Watch { .. }) => None,
    };
    match next {
        Some(mut n) if n.owes_alert() && !matches!(n.sending_until, Some(until) if until > now) => {
            n.sending_until = Some(now + SEND_LEASE_MS);
            Plan {
                next: Some(n),
                send: true,
            }
        }
        Some(n) if Some(&n) == prev => Plan {
            next: None,
            send: false,
        },
        other => Plan {
            next: other,
            send: false,
        },
    }
}

fn opened(f: &StoreFailure, now: UnixMillis) -> CannotStoreState {
    CannotStoreState {
        state: AlarmState::Firing,
        since: now,
        resolved_at: None,
        last_failure_at: now,
        failures: 1,
        last: f.clone(),
        sent: None,
        attempts: 0,
        last_attempt_at: None,
        last_error: None,
        sending_until: None,
    }
}

impl CannotStoreState {
    /// Whether the receiver has not yet acknowledged the current state.
    pub fn owes_alert(&self) -> bool {
        self.sent != Some(self.state)
    }

    /// The alert for the current state.
    pub fn alert(&self) -> Alert {
        Alert {
            id: AlarmId::new(AlarmKind::DlqCannotStore, "dlq"),
            state: self.state,
            detail: json!({"failures": self.failures, "code": self.last.code, "message": self.last.message,
                "queue_message_id": self.last.queue_message_id, "source": self.last.source,
                "last_failure_at": self.last_failure_at}),
            since: self.since,
            resolved_at: self.resolved_at,
        }
    }

    /// The content after the POST the lease allowed: `Ok` for a 2xx.
    pub fn after_post(&self, now: UnixMillis, result: Result<(), String>) -> CannotStoreState {
        let mut next = self.clone();
        next.attempts += 1;
        next.last_attempt_at = Some(now);
        next.sending_until = None;
        match result {
            Ok(()) => {
                next.sent = Some(self.state);
                next.last_error = None;
            }
            Err(e) => next.last_error = Some(e.chars().take(MAX_ERROR_CHARS).collect()),
        }
        next
    }

    /// Its delivery, in the shape `GET /alerts` shows for every alarm.
    pub fn delivery(&self) -> Delivery {
        Delivery {
            sent: self.sent,
            attempts: self.attempts,
            last_attempt_at: self.last_attempt_at,
            last_error: self.last_error.clone(),
        }
    }
}

#[cfg(test)]
mod tests;
