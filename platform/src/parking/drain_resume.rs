//! Resuming drains whose chain of messages was lost: local queues live in
//! memory, so a restart of `npm start` drops every delayed step. The
//! `drains` rows survive in D1; one whose step is long overdue gets a new
//! generation (fencing off the old chain, should it still exist) and a
//! fresh message.

use super::COMPONENT;
use crate::db::{drains, error_message};
use crate::{log, now_ms, queue_send};
use hookrelay_core::parking::drain_plan::{RESUME_EVERY_MS, STALE_AFTER_MS};
use hookrelay_core::parking::DrainMessage;
use std::cell::Cell;
use worker::Env;

/// Most drains revived by one check.
const REVIVE_PER_CHECK: u32 = 100;

thread_local! {
    static LAST_CHECK_MS: Cell<i64> = const { Cell::new(i64::MIN) };
}

/// Whether this isolate is due for a [`resume`] check, claiming the check
/// when it is. Synchronous, so a request that finds nothing due spawns no
/// future for it (a `wait_until` per request costs a promise and a task).
pub fn claim_due() -> bool {
    let now = now_ms();
    LAST_CHECK_MS.with(|last| {
        if now.saturating_sub(last.get()) < RESUME_EVERY_MS {
            return false;
        }
        last.set(now);
        true
    })
}

/// Runs [`resume`] if this isolate has not in the last 30 s. Cheap to call
/// from every queue batch.
pub async fn resume_if_due(env: &Env) {
    if claim_due() {
        resume(env).await;
    }
}

/// Re-sends a step for every drain whose step is long overdue. Failures are
/// logged; the next check tries again.
pub async fn resume(env: &Env) {
    let now = now_ms();
    let revived = async {
        let db = env.d1("DB")?;
        let rows = drains::revive_stale(&db, now - STALE_AFTER_MS, now, REVIVE_PER_CHECK).await?;
        if rows.is_empty() {
            return Ok(rows);
        }
        let queue = env.queue("CONTROL")?;
        let messages: Vec<String> = rows
            .iter()
            .map(|(d, g)| DrainMessage::new(d, *g).to_json())
            .collect();
        queue_send::send_json_batch(&queue, &messages).await?;
        Ok::<_, worker::Error>(rows)
    };
    match revived.await {
        Ok(rows) => {
            for (destination, generation) in rows {
                log::warn(
                    COMPONENT,
                    "drain_resumed",
                    log::fields! {"destination": destination, "generation": generation},
                );
            }
        }
        Err(e) => log::error(
            COMPONENT,
            "drain_resume_failed",
            log::fields! {"err": error_message(&e)},
        ),
    }
}
