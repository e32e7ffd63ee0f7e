//! The alarm state machine: one alarm per id, fired once when its condition
//! starts, resolved once when it ends, never repeated while it persists.
//!
//! Each firing is an *episode* keyed by `(id, since)`: a condition that ends
//! and later starts again opens a new episode with a new `since`, so the
//! receiver's `X-Operation-Id` (`{id}:{state}:{since}`) differs, and the old
//! episode stays as history until the sweep ages it out.
//!
//! **Flapping.** An episode resolves only after its condition was absent on
//! [`CLEAR_RUNS_TO_RESOLVE`] consecutive runs (at the 5-minute cron, 5 to 10
//! minutes of quiet); one run that sees the condition again resets the count.
//! A condition that comes and goes on alternate runs therefore stays one
//! firing episode and sends nothing more, instead of a fire/resolve pair
//! every ten minutes.
//!
//! **Delivery.** An episode owes an alert while the last state delivered to
//! `ALERT_WEBHOOK_URL` is not its current state ([`Owing`]). A failed POST
//! leaves it owed, so the next run sends it again; an episode that resolved
//! before its firing alert got through sends only the `resolved` alert
//! (which carries `since`). Without a receiver nothing is owed, and a
//! resolved episode stops being owed once it is as old as the alarm
//! history is kept (`DLQ_RETENTION`), so the sweep takes resolved episodes
//! by age alone and a receiver down for weeks leaves nothing piling up.
//! At most [`MAX_ALERTS_PER_RUN`] alerts go out per run, oldest first, and
//! never more than the invocation's subrequest budget leaves
//! (`super::watchdog_budget`).

use super::conditions::Condition;
use super::AlarmId;
use crate::retention::settings::RetentionConfig;
use crate::retention::tables::age_rules;
use crate::state::{AlarmState, ArchiveTable};
use crate::UnixMillis;
use serde_json::Value;

/// Consecutive runs without the condition before an episode resolves.
pub const CLEAR_RUNS_TO_RESOLVE: u32 = 2;
/// Alerts POSTed per run at most; the rest wait for the next run.
pub const MAX_ALERTS_PER_RUN: usize = 10;
/// Longest `last_error` kept, in characters.
pub const MAX_ERROR_CHARS: usize = 300;
/// To whom alerts are owed, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owing {
    /// Whether `ALERT_WEBHOOK_URL` is set: without it nothing is owed.
    pub receiver: bool,
    /// How long a resolved episode stays owed: as long as the alarm
    /// history is kept, after which the sweep takes it.
    pub resolved_for_ms: i64,
}

impl Owing {
    /// Owing with or without a receiver, for as long as `retention` keeps
    /// the alarm history.
    pub fn new(receiver: bool, retention: &RetentionConfig) -> Owing {
        let resolved_for_ms = age_rules(retention)
            .iter()
            .find(|r| r.table == ArchiveTable::Alarms)
            .map_or(retention.dlq_retention_ms, |r| r.age_ms);
        Owing {
            receiver,
            resolved_for_ms,
        }
    }

    /// Episodes resolved before this still owe nothing at `now`.
    pub fn resolved_cutoff(&self, now: UnixMillis) -> UnixMillis {
        now - self.resolved_for_ms
    }

    /// How many resolved episodes whose alert may be owed a run reads
    /// (oldest first): as many as it could send, none without a receiver.
    pub fn resolved_read_limit(&self) -> u32 {
        if self.receiver {
            MAX_ALERTS_PER_RUN as u32
        } else {
            0
        }
    }
}

/// How an episode's alerts have reached the receiver.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delivery {
    /// The last state the receiver acknowledged with a 2xx, if any.
    pub sent: Option<AlarmState>,
    /// POSTs tried for this episode, successful or not.
    pub attempts: u32,
    /// When the last POST was tried.
    pub last_attempt_at: Option<UnixMillis>,
    /// Why the last POST failed; `None` after a success.
    pub last_error: Option<String>,
}

/// One firing episode of one alarm, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct AlarmRecord {
    /// `{kind}:{subject}`.
    pub id: AlarmId,
    /// Firing or resolved.
    pub state: AlarmState,
    /// When the condition started.
    pub since: UnixMillis,
    /// When the episode resolved.
    pub resolved_at: Option<UnixMillis>,
    /// The latest figures while firing (frozen once resolved).
    pub detail: Value,
    /// Consecutive runs that did not see the condition.
    pub clear_runs: u32,
    /// Its alerts' delivery.
    pub delivery: Delivery,
}

impl AlarmRecord {
    /// Whether an alert for the current state is still owed at `now`.
    pub fn owes_alert(&self, owing: &Owing, now: UnixMillis) -> bool {
        let in_time = match (self.state, self.resolved_at) {
            (AlarmState::Resolved, Some(at)) => at >= owing.resolved_cutoff(now),
            _ => true,
        };
        owing.receiver && in_time && self.delivery.sent != Some(self.state)
    }
}

/// What one run decided.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunOutcome {
    /// Episodes to write (new, or changed in any field).
    pub changed: Vec<AlarmRecord>,
    /// Ids that started firing in this run.
    pub fired: Vec<AlarmId>,
    /// Ids that resolved in this run.
    pub resolved: Vec<AlarmId>,
}

/// Advances the alarms by one run. `firing` holds the stored episodes in
/// state `firing` (at most one per id); `active` the conditions that hold at
/// `now`.
pub fn advance(firing: &[AlarmRecord], active: &[Condition], now: UnixMillis) -> RunOutcome {
    let mut out = RunOutcome::default();
    for rec in firing {
        let next = match active.iter().find(|c| c.id == rec.id) {
            Some(c) => still_firing(rec, c),
            None => clearing(rec, now),
        };
        if next.state == AlarmState::Resolved {
            out.resolved.push(next.id.clone());
        }
        if next != *rec {
            out.changed.push(next);
        }
    }
    for c in active {
        if !firing.iter().any(|r| r.id == c.id) {
            out.fired.push(c.id.clone());
            out.changed.push(AlarmRecord {
                id: c.id.clone(),
                state: AlarmState::Firing,
                since: now,
                resolved_at: None,
                detail: c.detail.clone(),
                clear_runs: 0,
                delivery: Delivery::default(),
            });
        }
    }
    out
}

fn still_firing(rec: &AlarmRecord, c: &Condition) -> AlarmRecord {
    AlarmRecord {
        detail: c.detail.clone(),
        clear_runs: 0,
        ..rec.clone()
    }
}

fn clearing(rec: &AlarmRecord, now: UnixMillis) -> AlarmRecord {
    let clear_runs = rec.clear_runs + 1;
    if clear_runs < CLEAR_RUNS_TO_RESOLVE {
        return AlarmRecord {
            clear_runs,
            ..rec.clone()
        };
    }
    AlarmRecord {
        state: AlarmState::Resolved,
        resolved_at: Some(now),
        clear_runs,
        ..rec.clone()
    }
}

/// The episodes whose alert is owed at `now`, at most `max`
/// (`super::watchdog_budget::alerts_within`): firing ones first, then
/// resolved ones, each oldest first, so a backlog of resolves left by a
/// receiver that was down never holds back an alarm firing now. Without a
/// receiver nothing is due: the alarms are still recorded and listed.
pub fn due_alerts<'a>(
    episodes: &'a [AlarmRecord],
    owing: &Owing,
    now: UnixMillis,
    max: usize,
) -> Vec<&'a AlarmRecord> {
    let mut due: Vec<&AlarmRecord> = episodes
        .iter()
        .filter(|e| e.owes_alert(owing, now))
        .collect();
    let key = |e: &AlarmRecord| (e.state != AlarmState::Firing, e.since);
    crate::support::small_sort::sort_by(&mut due, |a, b| (key(a), &a.id).cmp(&(key(b), &b.id)));
    due.truncate(max);
    due
}

/// The episode after a POST of its current state at `now`: `Ok` is a 2xx,
/// `Err` says what the receiver (or the network) answered.
pub fn after_post(rec: &AlarmRecord, now: UnixMillis, result: Result<(), String>) -> AlarmRecord {
    let mut next = rec.clone();
    next.delivery.attempts += 1;
    next.delivery.last_attempt_at = Some(now);
    match result {
        Ok(()) => {
            next.delivery.sent = Some(rec.state);
            next.delivery.last_error = None;
        }
        Err(e) => next.delivery.last_error = Some(e.chars().take(MAX_ERROR_CHARS).collect()),
    }
    next
}

#[cfg(test)]
mod tests;
