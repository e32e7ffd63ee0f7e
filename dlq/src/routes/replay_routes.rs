//! `POST /webhook-dlq/:id/replay` and `POST /webhooks/dlq/replay-all`.
//!
//! Replay-all processes a bounded slice per call (`max_entries`, default
//! 100, at most 500) and answers `next_cursor` when more remain: a Workers
//! request has a subrequest and time budget, and a 10,000-entry backlog is
//! drained by calling again with the cursor.

use super::{ApiError, ApiResult};
use crate::config_cache::Config;
use crate::entries::relay_client::Relay;
use crate::entries::replay::{replay_entry, ReplayContext, ReplayError, ReplayResult, COMPONENT};
use hookrelay_core::admin::query::{decode_cursor, encode_cursor, Cursor};
use hookrelay_core::deliver::pacing::Pacer;
use hookrelay_core::metrics::{Metric, MetricName};
use hookrelay_core::replay::call::RefusalCode;
use hookrelay_core::replay::plan::{
    check_replayable, closable_duplicates, next_cursor, parse_reason_body, parse_replay_all, plan,
    Candidate, Plan, ReplayAllRequest,
};
use hookrelay_core::replay::verdict::{after_batch, AfterBatch, Turn};
use hookrelay_core::state::error_code::{ErrorCode, Failure};
use hookrelay_core::state::{DownstreamResult, EntryStatus, ReplayOutcome};
use hookrelay_core::support::d1_error::classify_d1_error;
use hookrelay_platform::db::dead_letters::{self, CandidateRow};
use hookrelay_platform::db::{error_message, replay_audit};
use hookrelay_platform::paced::run_batch;
use hookrelay_platform::{metrics, now_ms};
use serde_json::{json, Value};
use std::cell::RefCell;
use worker::D1Database;

/// Replays one entry.
pub async fn replay_one(
    db: &D1Database,
    cfg: &Config,
    relay: &Relay,
    id: &str,
    body: &Value,
    actor: &str,
    now: i64,
) -> ApiResult {
    let reason = parse_reason_body(body)?;
    let entry = dead_letters::get(db, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no dead-letter entry '{id}'")))?;
    check_replayable(entry.summary.status).map_err(ApiError::Conflict)?;
    let ctx = ReplayContext {
        actor,
        reason: &reason,
        run_id: None,
        job_id: None,
        max_replay_attempts: cfg.dlq.max_replay_attempts,
        now_ms: now,
    };
    match replay_entry(db, relay, &entry, &ctx).await {
        Ok(result) => Ok(serde_json::to_value(result).unwrap_or(Value::Null)),
        Err(ReplayError::Refused(why)) => Err(ApiError::Conflict(why)),
        Err(ReplayError::RefusedAs(code, why)) => Err(ApiError::Refused {
            status: code.http_status(),
            code: code.api_code(),
            message: why,
        }),
        Err(ReplayError::Storage(e)) => Err(e.into()),
    }
}

/// One slice of pending entries, oldest first.
struct Slice {
    rows: Vec<CandidateRow>,
    /// Where this call started.
    from: Option<Cursor>,
    /// After the slice, when more remain.
    after: Option<Cursor>,
}

impl Slice {
    /// The cursor the answer gives: never past an entry refused over its
    /// destination's rate (`hookrelay_core::replay::plan::next_cursor`).
    fn next(&self, over_rate: &[String]) -> Option<String> {
        let keys: Vec<Cursor> = self.rows.iter().map(key).collect();
        let first_refused = self.rows.iter().position(|r| over_rate.contains(&r.id));
        next_cursor(self.from.as_ref(), &keys, first_refused, self.after.clone())
            .map(|c| encode_cursor(&c))
    }
}

fn key(r: &CandidateRow) -> Cursor {
    Cursor {
        at_ms: r.created_at,
        id: r.id.clone(),
    }
}

async fn slice(db: &D1Database, req: &ReplayAllRequest) -> Result<Slice, ApiError> {
    let from = req.cursor.as_deref().map(decode_cursor).transpose()?;
    let take = req.slice_entries();
    let mut rows = dead_letters::replay_candidates(db, &req.filter, from.as_ref(), take).await?;
    let more = rows.len() > take as usize;
    rows.truncate(take as usize);
    let after = rows.last().filter(|_| more).map(key);
    Ok(Slice { rows, from, after })
}

/// Replays pending entries in batches, optionally behind a canary.
pub async fn replay_all(
    db: &D1Database,
    cfg: &Config,
    relay: &Relay,
    body: &Value,
    actor: &str,
    now: i64,
) -> ApiResult {
    let req = parse_replay_all(body)?;
    let slice = slice(db, &req).await?;
    let rows = &slice.rows;
    let candidates: Vec<Candidate> = rows
        .iter()
        .map(|r| Candidate {
            id: r.id.clone(),
            content_hash: r.content_hash.clone(),
        })
        .collect();
    let work = plan(&candidates, req.canary, req.concurrency);
    let run_id = format!(
        "run_{now}_{}",
        rows.first().map_or("empty", |r| r.id.as_str())
    );
    let ctx = ReplayContext {
        actor,
        reason: &req.reason,
        run_id: Some(&run_id),
        job_id: None,
        max_replay_attempts: cfg.dlq.max_replay_attempts,
        now_ms: now,
    };
    let (results, over_rate, end) = run_batches(db, relay, &work, &req, &ctx).await;
    let stopped = end == AfterBatch::CanaryFailed;
    let succeeded: Vec<&str> = results
        .iter()
        .filter(|r| r.outcome.succeeded())
        .map(|r| r.id.as_str())
        .collect();
    let closable = closable_duplicates(&candidates, &work.deduped, &succeeded);
    let deduped = if stopped {
        0
    } else {
        close_deduped(db, &closable, &ctx).await?
    };
    let remaining = dead_letters::count_pending(db, &req.filter).await?;
    let run = Run {
        next_cursor: if stopped {
            None
        } else {
            slice.next(&over_rate)
        },
        results,
        over_rate,
        stopped,
        deduped,
        remaining,
        run_id: &run_id,
    };
    Ok(answer(&req, &work, run))
}

/// What one replay-all call did.
struct Run<'a> {
    results: Vec<ReplayResult>,
    /// Entries refused over their destination's rate: untouched, pending.
    over_rate: Vec<String>,
    stopped: bool,
    deduped: usize,
    remaining: i64,
    next_cursor: Option<String>,
    run_id: &'a str,
}

/// Runs the canary batches, then the rest unless the canary stopped the
/// run, each replay started when the pacer allows (`rate_per_s`, if
/// given). A batch with an entry over its destination's rate ends the call
/// there, as a job's step ends (`verdict::after_batch`). Answers the
/// results, the entries refused over their rate, and how the run ended.
async fn run_batches(
    db: &D1Database,
    relay: &Relay,
    work: &Plan,
    req: &ReplayAllRequest,
    ctx: &ReplayContext<'_>,
) -> (Vec<ReplayResult>, Vec<String>, AfterBatch) {
    let mut results: Vec<ReplayResult> = Vec::new();
    let mut over_rate = Vec::new();
    let pacer = RefCell::new(Pacer::new(req.rate_per_s, now_ms()));
    let batches = work
        .canary
        .iter()
        .map(|b| (true, b))
        .chain(work.rest.iter().map(|b| (false, b)));
    for (is_canary, batch) in batches {
        let runs = run_batch(&pacer, batch, |id| replay_by_id(db, relay, id, ctx)).await;
        // `None`: no longer pending when its turn came, so not taken.
        let (ids, turns): (Vec<&String>, Vec<Turn<ReplayResult>>) = batch
            .iter()
            .zip(runs)
            .filter_map(|(id, turn)| Some((id, turn?)))
            .unzip();
        let end = after_batch(is_canary, &turns, |r: &ReplayResult| !r.outcome.succeeded());
        for (id, turn) in ids.into_iter().zip(turns) {
            match turn {
                Turn::Done(r) => results.push(r),
                Turn::OverRate => over_rate.push(id.clone()),
            }
        }
        if end != AfterBatch::Next {
            return (results, over_rate, end);
        }
    }
    (results, over_rate, AfterBatch::Next)
}

/// The seed's answer: `attempted = succeeded + failed + deduped`.
fn answer(req: &ReplayAllRequest, work: &Plan, run: Run<'_>) -> Value {
    let Run {
        results,
        over_rate,
        stopped,
        deduped,
        remaining,
        next_cursor,
        run_id,
    } = run;
    let succeeded = results.iter().filter(|r| r.outcome.succeeded()).count();
    let canary_results = &results[..work.canary_size().min(results.len())];
    let canary_ok = canary_results
        .iter()
        .filter(|r| r.outcome.succeeded())
        .count();
    let canary_failed = canary_results.len() - canary_ok;
    let mut data = json!({
        "attempted": results.len() + deduped,
        "succeeded": succeeded,
        "failed": results.len() - succeeded,
        "deduped": deduped,
        "run_id": run_id,
        "remaining": remaining,
        "next_cursor": next_cursor,
        "results": results,
    });
    if !over_rate.is_empty() {
        data["over_rate"] = json!({
            "count": over_rate.len(),
            "ids": over_rate,
            "message": "these entries' destination is over its rate_per_s: they were not attempted and stay pending as they were; this call stopped before them, and next_cursor takes them again (call again once the rate allows)",
        });
    }
    if req.canary.is_some() {
        data["canary"] = json!({
            "size": work.canary_size(),
            "succeeded": canary_ok,
            "failed": canary_failed,
            "passed": !stopped,
        });
        if stopped {
            data["stopped"] = json!("the canary slice failed, so nothing past it was replayed; read the failed results, fix the cause, then run again");
        }
    }
    data
}

/// Replays one entry if it is still pending when its turn comes. Over its
/// destination's rate it is left as it was: pending, its replay count
/// unchanged, not attempted (the jobs' rule, `verdict::Turn::OverRate`).
async fn replay_by_id(
    db: &D1Database,
    relay: &Relay,
    id: &str,
    ctx: &ReplayContext<'_>,
) -> Option<Turn<ReplayResult>> {
    let entry = dead_letters::get(db, id).await.ok().flatten()?;
    if entry.summary.status != EntryStatus::Pending {
        return None;
    }
    let error = match replay_entry(db, relay, &entry, ctx).await {
        Ok(r) => return Some(Turn::Done(r)),
        Err(ReplayError::RefusedAs(RefusalCode::RateLimited, _)) => return Some(Turn::OverRate),
        Err(ReplayError::Refused(why) | ReplayError::RefusedAs(_, why)) => {
            Failure::new(ErrorCode::Unknown, why)
        }
        Err(ReplayError::Storage(e)) => classify_d1_error(&error_message(&e)),
    };
    // Nothing changed: the entry stays pending with its replay count.
    Some(Turn::Done(ReplayResult {
        id: id.to_string(),
        outcome: ReplayOutcome::Failed,
        status: EntryStatus::Pending,
        replay_attempts: u32::try_from(entry.summary.replay_attempts).unwrap_or(0),
        delivery: DownstreamResult::NotForwarded,
        error: Some(error),
    }))
}

/// Entries whose payload was already replayed in this run are closed as
/// `replayed` with an audit outcome `deduped`.
async fn close_deduped(
    db: &D1Database,
    ids: &[String],
    ctx: &ReplayContext<'_>,
) -> Result<usize, ApiError> {
    if ids.is_empty() {
        return Ok(0);
    }
    let mut stmts = Vec::new();
    for id in ids {
        stmts.push(dead_letters::close_as_deduped(db, id, ctx.now_ms)?);
        let audit = ctx.audit(id, None, ReplayOutcome::Deduped, None);
        stmts.push(replay_audit::insert(db, &audit)?);
    }
    hookrelay_platform::db::batch(db, stmts).await?;
    metrics::count(
        Metric::new(MetricName::ReplayDeduped, COMPONENT),
        ids.len() as u64,
    );
    Ok(ids.len())
}
