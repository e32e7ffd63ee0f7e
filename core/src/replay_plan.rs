//! Replay governance, as pure decisions: who may be replayed, in which
//! order, in what batches, how fast, and what a result does to an entry.
//!
//! The seeds' lesson is that a replay can cause a second incident. So a
//! replay needs a reason, runs in bounded batches at a bounded rate, can
//! start with a canary slice that stops everything if it fails, never sends
//! the same payload twice in one run, and gives up on an entry (`poisoned`)
//! after `MAX_REPLAY_ATTEMPTS` failures instead of retrying it forever.

use crate::admin_query::{dead_letter_filter_from_json, DeadLetterFilter};
use serde_json::Value;

/// Shortest accepted reason, after trimming.
pub const MIN_REASON_CHARS: usize = 5;
/// Longest accepted reason.
pub const MAX_REASON_CHARS: usize = 500;
/// Default replay-all concurrency.
pub const DEFAULT_CONCURRENCY: u32 = 5;
/// Concurrency is clamped to this range.
pub const CONCURRENCY_RANGE: (u32, u32) = (1, 50);
/// Default number of entries one replay-all call processes.
pub const DEFAULT_MAX_ENTRIES: u32 = 100;
/// The most entries one replay-all call processes. A call is one Workers
/// request with a subrequest and time budget; each replay costs a handful
/// of D1 calls and one downstream call, so a 10,000-entry backlog is
/// drained by following `next_cursor` over several calls.
pub const MAX_MAX_ENTRIES: u32 = 500;

/// A bad request body field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyError {
    /// The field, e.g. `reason`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

fn body_error(field: &str, message: impl Into<String>) -> BodyError {
    BodyError {
        field: field.to_string(),
        message: message.into(),
    }
}

/// A replay reason: trimmed, 5 to 500 characters.
pub fn validate_reason(raw: Option<&Value>) -> Result<String, BodyError> {
    let Some(Value::String(text)) = raw else {
        return Err(body_error(
            "reason",
            format!(
                "is required: say why you are replaying, in at least {MIN_REASON_CHARS} characters"
            ),
        ));
    };
    let reason = text.trim();
    let chars = reason.chars().count();
    if chars < MIN_REASON_CHARS {
        return Err(body_error(
            "reason",
            format!("must be at least {MIN_REASON_CHARS} characters after trimming (got {chars})"),
        ));
    }
    if chars > MAX_REASON_CHARS {
        return Err(body_error(
            "reason",
            format!("must be at most {MAX_REASON_CHARS} characters"),
        ));
    }
    Ok(reason.to_string())
}

/// Concurrency, defaulting to 5 and clamped to 1–50 as the contract says.
pub fn clamp_concurrency(raw: Option<&Value>) -> Result<u32, BodyError> {
    match raw {
        None | Some(Value::Null) => Ok(DEFAULT_CONCURRENCY),
        Some(v) => {
            let n = v
                .as_f64()
                .ok_or_else(|| body_error("concurrency", "must be a number from 1 to 50"))?;
            Ok(n.clamp(
                f64::from(CONCURRENCY_RANGE.0),
                f64::from(CONCURRENCY_RANGE.1),
            ) as u32)
        }
    }
}

/// A parsed replay-all request.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayAllRequest {
    /// Why.
    pub reason: String,
    /// Entries replayed at once.
    pub concurrency: u32,
    /// Which pending entries.
    pub filter: DeadLetterFilter,
    /// Size of the canary slice, if any.
    pub canary: Option<u32>,
    /// Replays started per second at most, if limited.
    pub rate_per_s: Option<f64>,
    /// Entries this call processes at most.
    pub max_entries: u32,
    /// Where the previous call stopped.
    pub cursor: Option<String>,
}

/// Parses the replay-all body.
pub fn parse_replay_all(body: &Value) -> Result<ReplayAllRequest, BodyError> {
    if !body.is_object() {
        return Err(body_error(
            "body",
            "must be a JSON object such as {\"reason\": \"fixed the schema\"}",
        ));
    }
    let reason = validate_reason(body.get("reason"))?;
    let concurrency = clamp_concurrency(body.get("concurrency"))?;
    let filter = match body.get("filter") {
        None | Some(Value::Null) => DeadLetterFilter::default(),
        Some(f) => dead_letter_filter_from_json(f).map_err(|e| body_error(&e.param, e.message))?,
    };
    if filter.status.as_deref().is_some_and(|s| s != "pending") {
        return Err(body_error(
            "filter.status",
            "replay-all replays pending entries only; omit it or use \"pending\"",
        ));
    }
    let canary = match body.get("canary") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .filter(|n| *n >= 1 && *n <= u64::from(MAX_MAX_ENTRIES))
                .ok_or_else(|| {
                    body_error(
                        "canary",
                        format!("must be a whole number from 1 to {MAX_MAX_ENTRIES}"),
                    )
                })? as u32,
        ),
    };
    let rate_per_s = match body.get("rate_per_s") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_f64()
                .filter(|r| *r > 0.0 && *r <= 1000.0)
                .ok_or_else(|| {
                    body_error("rate_per_s", "must be a number above 0 and at most 1000")
                })?,
        ),
    };
    let max_entries = match body.get("max_entries") {
        None | Some(Value::Null) => DEFAULT_MAX_ENTRIES,
        Some(v) => v
            .as_u64()
            .filter(|n| *n >= 1 && *n <= u64::from(MAX_MAX_ENTRIES))
            .ok_or_else(|| {
                body_error(
                    "max_entries",
                    format!("must be a whole number from 1 to {MAX_MAX_ENTRIES}"),
                )
            })? as u32,
    };
    let cursor = match body.get("cursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => Some(c.clone()),
        Some(_) => {
            return Err(body_error(
                "cursor",
                "must be the next_cursor string of a previous answer",
            ))
        }
    };
    Ok(ReplayAllRequest {
        reason,
        concurrency,
        filter,
        canary,
        rate_per_s,
        max_entries,
        cursor,
    })
}

/// A pending entry selected for replay, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Entry id.
    pub id: String,
    /// SHA-256 of source and payload.
    pub content_hash: String,
}

/// The order of work for one replay-all call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// The canary slice, in batches. Empty without a canary.
    pub canary: Vec<Vec<String>>,
    /// Everything after the canary, in batches.
    pub rest: Vec<Vec<String>>,
    /// Entries whose payload is identical to an earlier one in this run.
    pub deduped: Vec<String>,
}

impl Plan {
    /// How many entries are in the canary slice.
    pub fn canary_size(&self) -> usize {
        self.canary.iter().map(Vec::len).sum()
    }
}

/// Plans a run: drop payloads already planned in this run, take the first
/// `canary` entries as the canary slice, and cut both parts into batches of
/// `concurrency`.
pub fn plan(candidates: &[Candidate], canary: Option<u32>, concurrency: u32) -> Plan {
    let mut seen = std::collections::HashSet::new();
    let mut unique = Vec::new();
    let mut deduped = Vec::new();
    for c in candidates {
        if seen.insert(c.content_hash.as_str()) {
            unique.push(c.id.clone());
        } else {
            deduped.push(c.id.clone());
        }
    }
    let size = concurrency.max(1) as usize;
    let split = canary.map_or(0, |n| (n as usize).min(unique.len()));
    let rest = unique.split_off(split);
    let batches = |ids: Vec<String>| ids.chunks(size).map(<[String]>::to_vec).collect();
    Plan {
        canary: batches(unique),
        rest: batches(rest),
        deduped,
    }
}

/// When batch number `index` (0-based, counting canary batches first) may
/// start, in ms after the run began, so that no more than `rate_per_s`
/// replays start per second.
pub fn batch_start_offset_ms(index: usize, batch_size: u32, rate_per_s: Option<f64>) -> i64 {
    match rate_per_s {
        None => 0,
        Some(rate) => ((index as f64) * f64::from(batch_size) / rate * 1000.0).round() as i64,
    }
}

pub use crate::state::EntryStatus;

/// Whether an entry in `status` may be replayed; the error is the 409 message.
pub fn check_replayable(status: EntryStatus) -> Result<(), String> {
    match status {
        EntryStatus::Pending => Ok(()),
        EntryStatus::Replayed => Err("this entry was already replayed successfully".into()),
        EntryStatus::Poisoned => Err(
            "this entry is poisoned: its replays failed too often; it is kept for audit only"
                .into(),
        ),
        EntryStatus::Archived => {
            Err("this entry is archived; unarchive it first if it should be replayed".into())
        }
        EntryStatus::Discarded => {
            Err("this entry was discarded and its payload erased; it cannot be replayed".into())
        }
    }
}

/// An entry's status and replay count after one replay.
pub fn after_replay(
    replay_attempts: u32,
    succeeded: bool,
    max_replay_attempts: u32,
) -> (EntryStatus, u32) {
    if succeeded {
        return (EntryStatus::Replayed, replay_attempts);
    }
    let attempts = replay_attempts.saturating_add(1);
    if attempts >= max_replay_attempts {
        (EntryStatus::Poisoned, attempts)
    } else {
        (EntryStatus::Pending, attempts)
    }
}

#[cfg(test)]
mod tests;
