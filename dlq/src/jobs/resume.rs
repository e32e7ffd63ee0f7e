//! The periodic check that resumes jobs whose chain of step messages was
//! lost (locally, `npm start` keeps queued messages in memory; a restart
//! drops them). D1 says which jobs are unfinished; each gets a new
//! generation and a fresh step, so a late original message is stale.

use hookrelay_core::jobs::step_schedule::step_interval_ms;
use hookrelay_core::jobs::JobRequest;
use hookrelay_core::metrics::Component;
use hookrelay_platform::db::jobs::{self, Transition};
use hookrelay_platform::{log, now_ms};
use std::cell::Cell;
use worker::{D1Database, Env};

/// A working job untouched for this long past its next step's due time has
/// lost its step message.
pub const STALLED_AFTER_MS: i64 = 60_000;
/// How often one isolate looks.
const CHECK_EVERY_MS: i64 = 30_000;

thread_local! {
    static LAST_CHECK: Cell<i64> = const { Cell::new(0) };
}

/// Resumes stalled jobs, at most once per 30 s per isolate.
pub async fn resume_stalled(db: &D1Database, env: &Env) {
    let now = now_ms();
    if now - LAST_CHECK.with(Cell::get) < CHECK_EVERY_MS {
        return;
    }
    LAST_CHECK.with(|c| c.set(now));
    let Ok(stalled) = jobs::stalled(db, now - STALLED_AFTER_MS).await else {
        return;
    };
    for job in stalled {
        // A slow job's next step may be due long after its last write: it
        // has stalled only once that step is overdue by STALLED_AFTER_MS.
        let interval_ms = serde_json::from_str::<JobRequest>(&job.spec)
            .map(|r| step_interval_ms(r.rate_per_s))
            .unwrap_or(0);
        if now - job.updated_at < interval_ms + STALLED_AFTER_MS {
            continue;
        }
        let t = Transition {
            id: &job.id,
            generation: job.generation,
            status: job.status,
            canary_passed: None,
            abort_reason: None,
            finished: false,
            bump: true,
        };
        if matches!(jobs::transition(db, &t, now).await, Ok(true)) {
            let sent = super::enqueue(env, &job.id, job.generation + 1, now, now).await;
            log::warn(
                Component::Admin,
                "job_resumed",
                log::fields! {"job_id": job.id, "status": job.status, "queued": sent.is_ok()},
            );
        }
    }
}
