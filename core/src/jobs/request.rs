//! `POST /api/v1/admin/jobs`: the body, parsed strictly. An unknown field at
//! any depth is refused naming it, because a job acts on everything its
//! filter matches.

use crate::admin::query::name_shown;
use crate::admin::query::{dead_letter_filter_from_json, parse_since, DeadLetterFilter};
use crate::deliver::pacing::{check_rate, RATE_RANGE};
use crate::replay::plan::{validate_reason, BodyError};
use crate::state::{EntryStatus, JobAction};
use crate::support::strict_json::{unknown_field, Field};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Default canary size.
pub const DEFAULT_CANARY_SIZE: u32 = 5;
/// Largest canary.
pub const MAX_CANARY_SIZE: u32 = 50;
/// Default pace, entries per second.
pub const DEFAULT_RATE_PER_S: f64 = 10.0;
/// Default entries at once.
pub const DEFAULT_CONCURRENCY: u32 = 5;
/// Most entries at once.
pub const MAX_CONCURRENCY: u32 = 50;
/// Default abort threshold.
pub const DEFAULT_MAX_FAILURE_RATIO: f64 = 0.2;
/// Default attempts before the threshold applies.
pub const DEFAULT_MIN_ATTEMPTS: u32 = 10;

/// Whether a passed canary waits for an operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    /// Wait in `awaiting_approval` until `POST …/approve`.
    Manual,
    /// Go on by itself.
    Auto,
}

/// Which entries a job takes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobFilter {
    /// Status, class, code, source, signature.
    #[serde(flatten)]
    pub entries: DeadLetterFilter,
    /// Dead-lettered at or after (unix ms).
    pub since_ms: Option<i64>,
    /// Dead-lettered at or before (unix ms).
    pub until_ms: Option<i64>,
}

/// The canary: how many entries, and whether one of each signature first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CanarySpec {
    /// Entries in the canary; 0 skips it.
    pub size: u32,
    /// One entry of each error signature first, largest groups first.
    pub per_signature: bool,
}

/// When the job stops itself.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AbortSpec {
    /// Stop once failed / attempted exceeds this.
    pub max_failure_ratio: f64,
    /// …and at least this many were attempted.
    pub min_attempts: u32,
}

/// A parsed job request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRequest {
    /// Replay, archive or discard.
    pub action: JobAction,
    /// Why (at least 5 characters).
    pub reason: String,
    /// Which entries.
    pub filter: JobFilter,
    /// Answer what would match and change nothing.
    pub dry_run: bool,
    /// The canary (replay only; size 0 otherwise).
    pub canary: CanarySpec,
    /// What happens after a passed canary.
    pub approve: Approval,
    /// Entries per second at most.
    pub rate_per_s: f64,
    /// Entries at once.
    pub concurrency: u32,
    /// The abort threshold.
    pub abort: AbortSpec,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Body {
    #[serde(default)]
    action: Field<String>,
    #[serde(default)]
    reason: Option<Value>,
    #[serde(default)]
    filter: Option<Value>,
    #[serde(default)]
    dry_run: Field<bool>,
    #[serde(default)]
    canary: Option<Value>,
    #[serde(default)]
    approve: Field<String>,
    #[serde(default)]
    rate_per_s: Field<f64>,
    #[serde(default)]
    concurrency: Option<Value>,
    #[serde(default)]
    abort: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CanaryBody {
    #[serde(default)]
    size: Field<u64>,
    #[serde(default)]
    per_signature: Field<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AbortBody {
    #[serde(default)]
    max_failure_ratio: Field<f64>,
    #[serde(default)]
    min_attempts: Field<u64>,
}

fn err(field: &str, message: impl Into<String>) -> BodyError {
    BodyError {
        field: field.to_string(),
        message: message.into(),
    }
}

/// Reads an object strictly into `T`, naming an unknown field under `prefix`.
fn strict<T: for<'de> Deserialize<'de>>(
    v: &Value,
    prefix: &str,
    form: &str,
) -> Result<T, BodyError> {
    if !v.is_object() {
        return Err(err(
            prefix.trim_end_matches('.'),
            format!("must be a JSON object: {form}"),
        ));
    }
    T::deserialize(v).map_err(|e| match unknown_field(&e) {
        Some(name) => err(
            &format!("{prefix}{}", name_shown(&name)),
            format!("unknown field; expected {form}"),
        ),
        None => err(prefix.trim_end_matches('.'), e.to_string()),
    })
}

/// Parses the job body.
pub fn parse_job_request(body: &Value) -> Result<JobRequest, BodyError> {
    let b: Body = strict(
        body,
        "",
        "action, reason, filter, dry_run, canary, approve, rate_per_s, concurrency, abort",
    )?;
    let action = match b.action {
        Field::Given(a) => JobAction::parse(&a)
            .map_err(|_| err("action", format!("must be one of {}", JobAction::names())))?,
        _ => {
            return Err(err(
                "action",
                format!("is required: one of {}", JobAction::names()),
            ))
        }
    };
    let reason = validate_reason(b.reason.as_ref())?;
    let filter = parse_filter(b.filter.as_ref(), action)?;
    let canary = parse_canary(b.canary.as_ref(), action)?;
    let approve = match b.approve {
        Field::Absent => Approval::Manual,
        Field::Given(a) if a == "manual" => Approval::Manual,
        Field::Given(a) if a == "auto" => Approval::Auto,
        _ => return Err(err("approve", "must be \"manual\" or \"auto\"")),
    };
    let rate_per_s = match b.rate_per_s {
        Field::Absent => DEFAULT_RATE_PER_S,
        Field::Given(r) => check_rate(r).map_err(|why| err("rate_per_s", why))?,
        Field::WrongType => return Err(err("rate_per_s", RATE_RANGE)),
    };
    let dry_run = match b.dry_run {
        Field::Absent => false,
        Field::Given(d) => d,
        Field::WrongType => return Err(err("dry_run", "must be true or false")),
    };
    Ok(JobRequest {
        action,
        reason,
        filter,
        dry_run,
        canary,
        approve,
        rate_per_s,
        concurrency: parse_concurrency(b.concurrency.as_ref())?,
        abort: parse_abort(b.abort.as_ref())?,
    })
}

/// Entries at once: a whole number from 1 to 50. Unlike replay-all's, a
/// job's concurrency is refused rather than clamped when it is out of
/// range, like every other job field: a job is created once and then runs
/// on its own, so it must run exactly as asked.
fn parse_concurrency(raw: Option<&Value>) -> Result<u32, BodyError> {
    match raw {
        None | Some(Value::Null) => Ok(DEFAULT_CONCURRENCY),
        Some(v) => match v.as_u64() {
            Some(n) if (1..=u64::from(MAX_CONCURRENCY)).contains(&n) => Ok(n as u32),
            _ => Err(err(
                "concurrency",
                format!("must be a whole number from 1 to {MAX_CONCURRENCY}"),
            )),
        },
    }
}

fn parse_filter(raw: Option<&Value>, action: JobAction) -> Result<JobFilter, BodyError> {
    let Some(v) = raw.filter(|v| !v.is_null()) else {
        return Ok(pending_only(JobFilter::default()));
    };
    let Value::Object(map) = v else {
        return Err(err("filter", "must be a JSON object with optional status, class, code, source, destination, kind, signature, since, until"));
    };
    let mut rest = map.clone();
    let mut time = |name: &str| -> Result<Option<i64>, BodyError> {
        match rest.remove(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => parse_since(&s, &format!("filter.{name}"))
                .map(Some)
                .map_err(|e| err(&e.param, e.message)),
            Some(Value::Number(n)) if n.as_i64().is_some_and(|n| n >= 0) => Ok(n.as_i64()),
            Some(_) => Err(err(
                &format!("filter.{name}"),
                "must be unix milliseconds or an RFC 3339 time",
            )),
        }
    };
    let since_ms = time("since")?;
    let until_ms = time("until")?;
    let entries =
        dead_letter_filter_from_json(&Value::Object(rest)).map_err(|e| err(&e.param, e.message))?;
    let filter = pending_only(JobFilter {
        entries,
        since_ms,
        until_ms,
    });
    let allowed = matches!(
        (action, filter.entries.status),
        (_, Some(EntryStatus::Pending))
            | (
                JobAction::Replay | JobAction::Discard,
                Some(EntryStatus::Archived)
            )
    );
    if !allowed {
        return Err(err(
            "filter.status",
            format!(
                "a {action} job acts on pending entries{}; omit the status or use one of those",
                if action == JobAction::Archive {
                    ""
                } else {
                    ", or archived ones when the filter names \"archived\""
                }
            ),
        ));
    }
    Ok(filter)
}

fn pending_only(mut f: JobFilter) -> JobFilter {
    if f.entries.status.is_none() {
        f.entries.status = Some(EntryStatus::Pending);
    }
    f
}

fn parse_canary(raw: Option<&Value>, action: JobAction) -> Result<CanarySpec, BodyError> {
    let replay = action == JobAction::Replay;
    let default = CanarySpec {
        size: if replay { DEFAULT_CANARY_SIZE } else { 0 },
        per_signature: true,
    };
    let Some(v) = raw.filter(|v| !v.is_null()) else {
        return Ok(default);
    };
    let c: CanaryBody = strict(v, "canary.", "size, per_signature")?;
    let size = match c.size {
        Field::Absent => default.size,
        Field::Given(n) if n <= u64::from(MAX_CANARY_SIZE) => n as u32,
        _ => {
            return Err(err(
                "canary.size",
                format!("must be a whole number from 0 to {MAX_CANARY_SIZE}"),
            ))
        }
    };
    if size > 0 && !replay {
        return Err(err(
            "canary",
            "a canary applies to replay jobs only; omit it, or give size 0",
        ));
    }
    let per_signature = match c.per_signature {
        Field::Absent => true,
        Field::Given(p) => p,
        Field::WrongType => return Err(err("canary.per_signature", "must be true or false")),
    };
    Ok(CanarySpec {
        size,
        per_signature,
    })
}

fn parse_abort(raw: Option<&Value>) -> Result<AbortSpec, BodyError> {
    let mut spec = AbortSpec {
        max_failure_ratio: DEFAULT_MAX_FAILURE_RATIO,
        min_attempts: DEFAULT_MIN_ATTEMPTS,
    };
    let Some(v) = raw.filter(|v| !v.is_null()) else {
        return Ok(spec);
    };
    let a: AbortBody = strict(v, "abort.", "max_failure_ratio, min_attempts")?;
    match a.max_failure_ratio {
        Field::Absent => {}
        Field::Given(r) if (0.0..=1.0).contains(&r) => spec.max_failure_ratio = r,
        _ => {
            return Err(err(
                "abort.max_failure_ratio",
                "must be a number from 0 to 1",
            ))
        }
    }
    match a.min_attempts {
        Field::Absent => {}
        Field::Given(n) if (1..=100_000).contains(&n) => spec.min_attempts = n as u32,
        _ => {
            return Err(err(
                "abort.min_attempts",
                "must be a whole number from 1 to 100000",
            ))
        }
    }
    Ok(spec)
}

#[cfg(test)]
mod tests;
