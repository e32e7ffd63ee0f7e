//! Maintenance (DESIGN §5): one bounded retention sweep step, then the
//! alarm watchdog. Run by the `*/5` cron, by `POST /internal/v1/maintenance`
//! (the DLQ worker's `maintenance/run`), and, for the sweep alone, by its
//! continuation messages on `hookrelay-control` while a step leaves work.
//!
//! The sweep and the watchdog each have their own `Result`: a failing
//! watchdog (an alert endpoint that is down) never blocks the sweep.
//! Both run under the maintenance lease (`lease`), so runs that start
//! together take turns.

pub mod continuation;
mod lease;
pub mod sweep;
pub mod watchdog;

use hookrelay_core::config::RelayConfig;
use hookrelay_core::metrics::Component;
use hookrelay_platform::db::{error_message, sweep_state};
use hookrelay_platform::{log, now_ms};
use serde_json::{json, Map, Value};
use worker::{D1Database, Env};

/// Runs a sweep step and the watchdog at `now_ms`, and answers DESIGN §4's
/// `maintenance/run` shape. A step that left work starts a new chain of
/// continuation messages (any older chain goes stale). While another run
/// holds the lease this one does nothing and answers `"more": true` with
/// `"busy_until"` (when that lease expires): the caller runs again.
pub async fn run(env: &Env, cfg: &RelayConfig, now_ms: i64) -> worker::Result<Value> {
    let (swept, held) = match lease::take(env, now_ms).await {
        Ok(lease::Turn::Held(held)) => (sweep_and_continue(env, cfg, now_ms).await, Some(held)),
        Ok(lease::Turn::Busy(busy_until)) => {
            let nothing = json!({"archived": {}, "objects_written": 0, "more": true, "busy_until": busy_until});
            return Ok(answered(nothing, Vec::new(), Vec::new(), now_ms));
        }
        // D1 is failing: no sweep, but the watchdog still runs (the
        // cannot-store alarm lives in R2).
        Err(e) => (Err(e), None),
    };
    let (fired, resolved) = match watchdog::run(env, cfg, now_ms).await {
        Ok(r) => (r.fired, r.resolved),
        Err(e) => {
            log::error(
                Component::Sweep,
                "watchdog_failed",
                log::fields! {"err": error_message(&e), "next": "the next run retries"},
            );
            (Vec::new(), Vec::new())
        }
    };
    if let Some(held) = held {
        lease::release(env, held).await;
    }
    // The watchdog ran either way (it watches D1 too); a failed sweep is
    // still this run's answer.
    Ok(answered(swept?, fired, resolved, now_ms))
}

fn answered(mut swept: Value, fired: Vec<String>, resolved: Vec<String>, now_ms: i64) -> Value {
    swept["alarms"] = json!({"fired": fired, "resolved": resolved});
    swept["took_ms"] = json!(self::now_ms() - now_ms);
    swept
}

async fn sweep_and_continue(env: &Env, cfg: &RelayConfig, now_ms: i64) -> worker::Result<Value> {
    let db = env.d1("DB")?;
    let answer = sweep_once(env, &db, cfg, now_ms).await?;
    // A new chain either way, so an older chain's messages go stale.
    let generation = sweep_state::new_generation(&db).await?;
    if answer["more"].as_bool() == Some(true) {
        continuation::send(env, generation).await?;
    }
    Ok(answer)
}

/// One sweep step, recorded in `sweep_state` (its answer, or its error),
/// answered without the alarms.
pub async fn sweep_once(
    env: &Env,
    db: &D1Database,
    cfg: &RelayConfig,
    now_ms: i64,
) -> worker::Result<Value> {
    match sweep::step(env, db, cfg.retention, now_ms).await {
        Ok(done) => {
            let r = &done.report;
            // Inserted one by one: collecting into the map would link a sort.
            let mut archived = Map::new();
            for (t, n) in &r.archived {
                archived.insert(t.as_str().to_string(), json!(n));
            }
            let answer =
                json!({"archived": archived, "objects_written": r.objects_written, "more": r.more});
            let text = answer.to_string();
            sweep_state::record(
                db,
                &sweep_state::RunRecord {
                    at: now_ms,
                    result: Some(&text),
                    error: None,
                    size_bytes: Some(r.size_bytes),
                    size_swept_through: r.size_swept_through,
                },
            )
            .await?;
            log::info(
                Component::Sweep,
                "sweep_step",
                log::fields! {"objects": r.objects_written, "more": r.more},
            );
            Ok(answer)
        }
        Err(e) => {
            let message = error_message(&e);
            log::error(
                Component::Sweep,
                "sweep_failed",
                log::fields! {"err": message, "next": "the next run redoes the journal's chunk"},
            );
            let record = sweep_state::RunRecord {
                at: now_ms,
                result: None,
                error: Some(&message),
                size_bytes: None,
                size_swept_through: None,
            };
            if let Err(e2) = sweep_state::record(db, &record).await {
                log::error(
                    Component::Sweep,
                    "sweep_record_failed",
                    log::fields! {"err": error_message(&e2)},
                );
            }
            Err(e)
        }
    }
}
