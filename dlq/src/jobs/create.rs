//! `POST /api/v1/admin/jobs`: a dry run, or a job with its fixed set.

use super::error::{JobError, JobResult};
use hookrelay_core::jobs::canary::{compose, SignatureGroup};
use hookrelay_core::jobs::lifecycle::commands;
use hookrelay_core::jobs::request::MAX_CANARY_SIZE;
use hookrelay_core::jobs::JobRequest;
use hookrelay_core::state::JobStatus;
use hookrelay_platform::db::job_entries::{self, SetSummary};
use hookrelay_platform::db::jobs;
use serde_json::{json, Value};
use worker::{D1Database, Env};

/// The canary of a set, as the core composes it.
fn canary_ids(req: &JobRequest, set: &SetSummary) -> Vec<String> {
    let groups: Vec<SignatureGroup> = set.groups.iter().map(|g| g.group()).collect();
    compose(
        &groups,
        &set.oldest,
        req.canary.size,
        req.canary.per_signature,
    )
}

/// Answers a dry run, or creates the job and enqueues its first step.
pub async fn create(
    db: &D1Database,
    env: &Env,
    req: JobRequest,
    actor: &str,
    now: i64,
) -> JobResult {
    let set = job_entries::summarize(db, &req.filter, now, MAX_CANARY_SIZE).await?;
    let canary = canary_ids(&req, &set);
    if req.dry_run {
        return Ok(json!({
            "matched": set.matched,
            "by_signature": set.groups,
            "by_source": set.by_source,
            "canary_ids": canary,
        }));
    }
    let id = format!(
        "job_{now:x}{:08x}",
        (js_sys::Math::random() * f64::from(u32::MAX)) as u32
    );
    let mut stmts = vec![
        jobs::insert(db, &id, &req, actor, set.matched, now)?,
        job_entries::insert_set(db, &id, &req.filter, now)?,
    ];
    stmts.extend(job_entries::mark_canary(db, &id, &canary)?);
    // `matched` is the set as written in this transaction, not the summary
    // read before it (a dead letter stored in between is in one, not both).
    stmts.push(jobs::set_matched_from_set(db, &id)?);
    let results = hookrelay_platform::db::batch(db, stmts).await?;
    #[derive(serde::Deserialize)]
    struct Matched {
        matched: i64,
    }
    let matched = results
        .last()
        .and_then(|r| r.decode::<Matched>().ok())
        .and_then(|rows| rows.first().map(|m| m.matched))
        .unwrap_or(set.matched as i64);
    super::enqueue(env, &id, 1, now, now)
        .await
        .map_err(|e| JobError::NotQueued(format!("the job was created but its first step could not be queued ({e}); it resumes on its own within a minute")))?;
    Ok(json!({"id": id, "status": JobStatus::Queued, "matched": matched}))
}

/// `GET /jobs/:id`: the job with its counts and canary.
pub async fn describe(db: &D1Database, id: &str) -> JobResult {
    let job = jobs::get(db, id)
        .await?
        .ok_or_else(|| JobError::NotFound(format!("no job '{id}'")))?;
    let canary = job_entries::canary(db, id).await?;
    Ok(view(&job, &canary))
}

/// The contract's shape of a job.
pub fn view(job: &jobs::JobRow, canary: &[job_entries::CanaryEntry]) -> Value {
    let spec: Value = serde_json::from_str(&job.spec).unwrap_or(Value::Null);
    let remaining = (job.matched - job.attempted - job.skipped).max(0);
    json!({
        "id": job.id,
        "action": job.action,
        "status": job.status,
        "reason": job.reason,
        "actor": job.actor,
        "filter": spec.get("filter"),
        "matched": job.matched,
        "attempted": job.attempted,
        "succeeded": job.succeeded,
        "failed": job.failed,
        "deduped": job.deduped,
        "skipped": job.skipped,
        "remaining": remaining,
        "canary": {
            "ids": canary.iter().map(|c| c.entry_id.as_str()).collect::<Vec<_>>(),
            "passed": job.canary_passed.map(|p| p == 1),
        },
        "abort_reason": job.abort_reason,
        "actions": commands(job.status),
        "rate_per_s": spec.get("rate_per_s"),
        "concurrency": spec.get("concurrency"),
        "approve": spec.get("approve"),
        "created_at": job.created_at,
        "updated_at": job.updated_at,
        "finished_at": job.finished_at,
    })
}
