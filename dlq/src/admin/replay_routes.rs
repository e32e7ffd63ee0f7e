//! `POST /webhook-dlq/:id/replay` and `POST /webhooks/dlq/replay-all`.
//!
//! Replay-all processes a bounded slice per call (`max_entries`, default
//! 100, at most 500) and answers `next_cursor` when more remain: a Workers
//! request has a subrequest and time budget, and a 10,000-entry backlog is
//! drained by calling again with the cursor.

use super::{ApiError, ApiResult};
use crate::admin_store::{self, CandidateRow};
use crate::config_cache::Config;
use crate::replay::{audit_statement, replay_entry, ReplayContext, ReplayResult};
use futures_util::future::join_all;
use hookrelay_core::admin_query::{decode_cursor, encode_cursor, Cursor};
use hookrelay_core::metrics::Metric;
use hookrelay_core::replay_plan::{
    batch_start_offset_ms, check_replayable, parse_replay_all, plan, validate_reason, Candidate,
    EntryStatus,
};
use hookrelay_platform::d1::text;
use hookrelay_platform::{metrics, now_ms};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;
use worker::{D1Database, Delay};

/// Replays one entry.
pub async fn replay_one(
    db: &D1Database,
    cfg: &Config,
    id: &str,
    body: &Value,
    actor: &str,
    now: i64,
) -> ApiResult {
    let reason = validate_reason(body.get("reason"))?;
    let entry = admin_store::get_entry(db, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no dead-letter entry '{id}'")))?;
    let status = EntryStatus::parse(&entry.summary.status).unwrap_or(EntryStatus::Pending);
    check_replayable(status).map_err(ApiError::Conflict)?;
    let ctx = ReplayContext {
        actor,
        reason: &reason,
        run_id: None,
        max_replay_attempts: cfg.dlq.max_replay_attempts,
        now_ms: now,
    };
    let result = replay_entry(db, &cfg.delivery, &entry, &ctx).await?;
    Ok(serde_json::to_value(result).unwrap_or(Value::Null))
}

/// Replays pending entries in batches, optionally behind a canary.
pub async fn replay_all(
    db: &D1Database,
    cfg: &Config,
    body: &Value,
    actor: &str,
    now: i64,
) -> ApiResult {
    let req = parse_replay_all(body)?;
    let cursor = req.cursor.as_deref().map(decode_cursor).transpose()?;
    let mut rows =
        admin_store::replay_candidates(db, &req.filter, cursor.as_ref(), req.max_entries).await?;
    let more = rows.len() > req.max_entries as usize;
    rows.truncate(req.max_entries as usize);
    let next_cursor = if more {
        rows.last().map(|r| {
            encode_cursor(&Cursor {
                at_ms: r.created_at,
                id: r.id.clone(),
            })
        })
    } else {
        None
    };
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
        max_replay_attempts: cfg.dlq.max_replay_attempts,
        now_ms: now,
    };
    let by_id: HashMap<&str, &CandidateRow> = rows.iter().map(|r| (r.id.as_str(), r)).collect();

    let mut results: Vec<ReplayResult> = Vec::new();
    let started = now_ms();
    let mut canary_failed = false;
    let batches = work
        .canary
        .iter()
        .map(|b| (true, b))
        .chain(work.rest.iter().map(|b| (false, b)));
    for (batch_index, (is_canary, batch)) in batches.enumerate() {
        if !is_canary && canary_failed {
            break;
        }
        let wait = batch_start_offset_ms(batch_index, req.concurrency, req.rate_per_s)
            - (now_ms() - started);
        if wait > 0 {
            Delay::from(Duration::from_millis(wait as u64)).await;
        }
        let runs = batch
            .iter()
            .filter(|id| by_id.contains_key(id.as_str()))
            .map(|id| replay_by_id(db, cfg, id, &ctx));
        let batch_results: Vec<ReplayResult> = join_all(runs).await.into_iter().flatten().collect();
        if is_canary && batch_results.iter().any(|r| !r.succeeded()) {
            canary_failed = true;
        }
        results.extend(batch_results);
    }
    let deduped = if canary_failed {
        0
    } else {
        mark_deduped(db, &work.deduped, &ctx).await?
    };
    let remaining = admin_store::count_pending(db, &req.filter).await?;
    let succeeded = results.iter().filter(|r| r.succeeded()).count();
    let canary_results = &results[..work.canary_size().min(results.len())];
    let mut data = json!({
        "attempted": results.len(),
        "succeeded": succeeded,
        "failed": results.len() - succeeded,
        "deduped": deduped,
        "run_id": run_id,
        "remaining": remaining,
        "next_cursor": if canary_failed { None } else { next_cursor },
        "results": results,
    });
    if req.canary.is_some() {
        let canary_ok = canary_results.iter().filter(|r| r.succeeded()).count();
        data["canary"] = json!({
            "size": work.canary_size(),
            "succeeded": canary_ok,
            "failed": canary_results.len() - canary_ok,
            "passed": !canary_failed,
        });
        if canary_failed {
            data["stopped"] = json!("the canary slice failed, so nothing past it was replayed; read the failed results, fix the cause, then run again");
        }
    }
    Ok(data)
}

/// Replays one entry if it is still pending when its turn comes.
async fn replay_by_id(
    db: &D1Database,
    cfg: &Config,
    id: &str,
    ctx: &ReplayContext<'_>,
) -> Option<ReplayResult> {
    let entry = admin_store::get_entry(db, id).await.ok().flatten()?;
    if entry.summary.status != "pending" {
        return None;
    }
    match replay_entry(db, &cfg.delivery, &entry, ctx).await {
        Ok(r) => Some(r),
        Err(e) => Some(ReplayResult {
            id: id.to_string(),
            outcome: "failed",
            status: "pending",
            replay_attempts: u32::try_from(entry.summary.replay_attempts).unwrap_or(0),
            delivery: "not_forwarded",
            error: Some(hookrelay_core::classify::classify_d1_error(
                &hookrelay_platform::d1::error_message(&e),
            )),
        }),
    }
}

/// Entries whose payload was already replayed in this run are closed as
/// `replayed` with an audit outcome `deduped`.
async fn mark_deduped(
    db: &D1Database,
    ids: &[String],
    ctx: &ReplayContext<'_>,
) -> Result<usize, ApiError> {
    if ids.is_empty() {
        return Ok(0);
    }
    let mut stmts = Vec::new();
    for id in ids {
        stmts.push(
            db.prepare("UPDATE dead_letters SET status = 'replayed', replayed_at = ?2 WHERE id = ?1 AND status = 'pending'")
                .bind(&[text(id), hookrelay_platform::d1::int(ctx.now_ms)])?,
        );
        stmts.push(audit_statement(db, id, None, ctx, "deduped", None)?);
    }
    db.batch(stmts).await?;
    metrics::count(Metric::new("replay_deduped", "admin"), ids.len() as u64);
    Ok(ids.len())
}
