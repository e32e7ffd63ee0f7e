//! Replay governance, as pure decisions: who may be replayed, in which
//! order, in what batches, how fast, and what a result does to an entry.
//!
//! The seeds' lesson is that a replay can cause a second incident. So a
//! replay needs a reason, runs in bounded batches at a bounded rate, can
//! start with a canary slice that stops everything if it fails, never sends
//! the same payload twice in one run, and gives up on an entry (`poisoned`)
//! after `MAX_REPLAY_ATTEMPTS` failures instead of retrying it forever.
//!
//! Request bodies are strict for the same reason: an unknown field, at any
//! depth, is refused under its name rather than ignored, since an ignored
//! `"fitler"` would replay every pending entry.

use crate::admin::query::{dead_letter_filter_from_json, name_shown, Cursor, DeadLetterFilter};
use crate::deliver::pacing::{calls_within, check_rate, RATE_RANGE};
use crate::support::strict_json::{unknown_field, Field};
use serde::de::DeserializeOwned;
use serde::Deserialize;
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
    /// The field, e.g. `reason`, or a dotted path such as `filter.source`.
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
    check_reason(raw.and_then(Value::as_str))
}

/// The reason rule on the text, if the field was a string at all: a
/// missing reason and one of the wrong type get the same answer, since the
/// fix is the same.
fn check_reason(text: Option<&str>) -> Result<String, BodyError> {
    let Some(text) = text else {
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
        Some(v) => v.as_f64().map(clamp_to_range).ok_or_else(concurrency_error),
    }
}

fn concurrency_of(field: Field<f64>) -> Result<u32, BodyError> {
    match field {
        Field::Absent => Ok(DEFAULT_CONCURRENCY),
        Field::Given(n) => Ok(clamp_to_range(n)),
        Field::WrongType => Err(concurrency_error()),
    }
}

fn clamp_to_range(n: f64) -> u32 {
    n.clamp(
        f64::from(CONCURRENCY_RANGE.0),
        f64::from(CONCURRENCY_RANGE.1),
    ) as u32
}

fn concurrency_error() -> BodyError {
    body_error("concurrency", "must be a number from 1 to 50")
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

/// The longest a paced replay-all call's slice lasts, in starts at its
/// rate: the call answers within about this long (DESIGN.md §4), and the
/// caller continues with the cursor.
pub const PACED_SLICE_MS: i64 = 20_000;

impl ReplayAllRequest {
    /// Entries this call takes: `max_entries`, and at a rate no more than
    /// [`PACED_SLICE_MS`] of starts.
    pub fn slice_entries(&self) -> u32 {
        match self.rate_per_s {
            Some(rate) => self.max_entries.min(calls_within(PACED_SLICE_MS, rate)),
            None => self.max_entries,
        }
    }
}

/// The replay-all body as read, before the range checks of
/// `parse_replay_all`. Every field is optional; `null` means absent.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct ReplayAllBody {
    reason: Field<String>,
    concurrency: Field<f64>,
    /// Kept as JSON: `dead_letter_filter_from_json` reads it, with its own
    /// strict struct, so its errors name `filter.<field>`.
    filter: Value,
    canary: Field<u64>,
    rate_per_s: Field<f64>,
    max_entries: Field<u64>,
    cursor: Field<String>,
}

const REPLAY_ALL_FIELDS: &str =
    "reason, concurrency, filter, canary, rate_per_s, max_entries and cursor";

/// Parses the replay-all body. An unknown field anywhere is refused under
/// its name (`fitler`, `filter.sourse`): replay-all acts on everything the
/// filter matches, so a typo must not silently widen it.
pub fn parse_replay_all(body: &Value) -> Result<ReplayAllRequest, BodyError> {
    let raw: ReplayAllBody = strict_body(body, REPLAY_ALL_FIELDS)?;
    let reason = check_reason(raw.reason.given().as_deref())?;
    let concurrency = concurrency_of(raw.concurrency)?;
    let filter = replay_filter(&raw.filter)?;
    let canary = match raw.canary {
        Field::Absent => None,
        given => Some(entry_count("canary", given)?),
    };
    let rate_per_s = match raw.rate_per_s {
        Field::Absent => None,
        Field::Given(r) => Some(check_rate(r).map_err(|why| body_error("rate_per_s", why))?),
        Field::WrongType => return Err(body_error("rate_per_s", RATE_RANGE)),
    };
    let max_entries = match raw.max_entries {
        Field::Absent => DEFAULT_MAX_ENTRIES,
        given => entry_count("max_entries", given)?,
    };
    let cursor = match raw.cursor {
        Field::Absent => None,
        Field::Given(c) => Some(c),
        Field::WrongType => {
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

/// The filter of replay-all, which replays pending entries only.
fn replay_filter(raw: &Value) -> Result<DeadLetterFilter, BodyError> {
    let filter = dead_letter_filter_from_json(raw).map_err(|e| body_error(&e.param, e.message))?;
    if filter.status.is_some_and(|s| s != EntryStatus::Pending) {
        return Err(body_error(
            "filter.status",
            "replay-all replays pending entries only; omit it or use \"pending\"",
        ));
    }
    Ok(filter)
}

/// A count of entries (`canary`, `max_entries`): a whole number from 1 to
/// `MAX_MAX_ENTRIES`. A wrong type and a value out of range get the same
/// message, since it says what is accepted either way.
fn entry_count(field: &str, given: Field<u64>) -> Result<u32, BodyError> {
    match given {
        Field::Given(n) if (1..=u64::from(MAX_MAX_ENTRIES)).contains(&n) => Ok(n as u32),
        _ => Err(body_error(
            field,
            format!("must be a whole number from 1 to {MAX_MAX_ENTRIES}"),
        )),
    }
}

/// The body of a single-entry route, exactly `{"reason": "..."}`.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct ReasonBody {
    reason: Field<String>,
}

/// Parses the body of a route whose only field is the reason (replaying
/// one entry): a JSON object with `reason`, checked as `validate_reason`
/// does. Any other field is refused under its name, so a client that sends
/// options this route does not have learns they were not applied.
pub fn parse_reason_body(body: &Value) -> Result<String, BodyError> {
    let raw: ReasonBody = strict_body(body, "reason")?;
    check_reason(raw.reason.given().as_deref())
}

/// Reads a JSON object into a strict body struct. `fields` lists the
/// struct's fields for the message about an unknown one.
fn strict_body<T: DeserializeOwned>(body: &Value, fields: &str) -> Result<T, BodyError> {
    // Checked first: serde would also read the struct from an array.
    if !body.is_object() {
        return Err(body_error(
            "body",
            "must be a JSON object such as {\"reason\": \"fixed the schema\"}",
        ));
    }
    T::deserialize(body).map_err(|e| match unknown_field(&e) {
        Some(name) => body_error(
            &name_shown(&name),
            format!("is not a field of this body; it takes {fields}"),
        ),
        // Every field reads as `Field` or `Value`, which never fail, so
        // an unknown field is the only refusal expected.
        None => body_error("body", format!("could not be read: {e}")),
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

/// The duplicates of a run that may be closed as replayed: only those whose
/// payload's own replay succeeded in this run. A duplicate of a payload
/// that failed stays pending, so it is never closed without its payload
/// having been delivered.
pub fn closable_duplicates(
    candidates: &[Candidate],
    deduped: &[String],
    succeeded_ids: &[&str],
) -> Vec<String> {
    let mut first_of_hash: std::collections::HashMap<&str, &str> = Default::default();
    let mut hash_of: std::collections::HashMap<&str, &str> = Default::default();
    for c in candidates {
        first_of_hash
            .entry(c.content_hash.as_str())
            .or_insert(c.id.as_str());
        hash_of.insert(c.id.as_str(), c.content_hash.as_str());
    }
    deduped
        .iter()
        .filter(|id| {
            hash_of
                .get(id.as_str())
                .and_then(|h| first_of_hash.get(h))
                .is_some_and(|first| succeeded_ids.contains(first))
        })
        .cloned()
        .collect()
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

/// Where the next replay-all call starts. An entry refused over its
/// destination's rate stays pending and the cursor never passes it, as a
/// job takes such an entry again: the next call starts just before the
/// first one in the slice's order (after the row before it, else where
/// this call started, else at the very start). Otherwise it starts after
/// the slice (`after_slice`; `None`: nothing more).
pub fn next_cursor(
    incoming: Option<&Cursor>,
    slice: &[Cursor],
    first_refused: Option<usize>,
    after_slice: Option<Cursor>,
) -> Option<Cursor> {
    let Some(i) = first_refused else {
        return after_slice;
    };
    let before = i.checked_sub(1).and_then(|j| slice.get(j)).or(incoming);
    Some(before.cloned().unwrap_or(Cursor {
        at_ms: i64::MIN,
        id: String::new(),
    }))
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
