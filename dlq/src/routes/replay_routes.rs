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
    check_replayable, closable_duplicates, parse_reason_body, parse_replay_all, plan, Candidate,
    Plan, ReplayAllRequest,
};
use hookrelay_core::replay::verdict::stops_run;
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

/// One slice of pending entries, oldest first, and the cursor after it.
async fn slice(
    db: &D1Database,
    req: &ReplayAllRequest,
) -> Result<(Vec<CandidateRow>, Option<String>), ApiError> {
    let cursor = req.cursor.as_deref().map(decode_cursor).transpose()?;
    let take = req.slice_entries();
    let mut rows = dead_letters::replay_candidates(db, &req.filter, cursor.as_ref(), take).await?;
    let more = rows.len() > take as usize;
    rows.truncate(take as usize);
    let next = rows.last().filter(|_| more).map(|r| {
        encode_cursor(&Cursor {
            at_ms: r.created_at,
            id: r.id.clone(),
        })
    });
    Ok((rows, next))
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
    let (rows, next_cursor) = slice(db, &req).await?;
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
    let (results, stopped) = run_batches(db, relay, &work, &req, &ctx).await;
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
        next_cursor: if stopped { None } else { next_cursor },
        results,
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
    stopped: bool,
    deduped: usize,
    remaining: i64,
    next_cursor: Option<String>,
    run_id: &'a str,
}

/// Runs the canary batches, then the rest unless the canary stopped the
/// run, each replay started when the pacer allows (`rate_per_s`, if
/// given). Answers the results and whether the run stopped.
async fn run_batches(
    db: &D1Database,
    relay: &Relay,
    work: &Plan,
    req: &ReplayAllRequest,
    ctx: &ReplayContext<'_>,
) -> (Vec<ReplayResult>, bool) {
    let mut results: Vec<ReplayResult> = Vec::new();
    let pacer = RefCell::new(Pacer::new(req.rate_per_s, now_ms()));
    let batches = work
        .canary
        .iter()
        .map(|b| (true, b))
        .chain(work.rest.iter().map(|b| (false, b)));
    for (is_canary, batch) in batches {
        let runs = run_batch(&pacer, batch, |id| replay_by_id(db, relay, id, ctx)).await;
        let done: Vec<ReplayResult> = runs.into_iter().flatten().collect();
        let outcomes: Vec<ReplayOutcome> = done.iter().map(|r| r.outcome).collect();
        results.extend(done);
        if stops_run(is_canary, &outcomes) {
            return (results, true);
        }
    }
    (results, false)
}

/// The seed's answer: `attempted = succeeded + failed + deduped`.
fn answer(req: &ReplayAllRequest, work: &Plan, run: Run<'_>) -> Value {
    let Run {
        results,
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

/// Replays one entry if it is still pending when its turn comes.
async fn replay_by_id(
    db: &D1Database,
    relay: &Relay,
    id: &str,
    ctx: &ReplayContext<'_>,
) -> Option<ReplayResult> {
    let entry = dead_letters::get(db, id).await.ok().flatten()?;
    if entry.summary.status != EntryStatus::Pending {
        return None;
    }
    let error = match replay_entry(db, relay, &entry, ctx).await {
        Ok(r) => return Some(r),
        // Over its destination's rate: nothing changed (no replay attempt
        // counted); the entry stays pending for a later run.
        Err(ReplayError::RefusedAs(RefusalCode::RateLimited, why)) => {
            Failure::new(ErrorCode::RateLimited, why)
        }
        Err(ReplayError::Refused(why) | ReplayError::RefusedAs(_, why)) => {
            Failure::new(ErrorCode::Unknown, why)
        }
        Err(ReplayError::Storage(e)) => classify_d1_error(&error_message(&e)),
    };
    // Nothing changed: the entry stays pending with its replay count.
    Some(ReplayResult {
        id: id.to_string(),
        outcome: ReplayOutcome::Failed,
        status: EntryStatus::Pending,
        replay_attempts: u32::try_from(entry.summary.replay_attempts).unwrap_or(0),
        delivery: DownstreamResult::NotForwarded,
        error: Some(error),
    })
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
