//! Maintenance (DESIGN §5): one bounded retention sweep step, then the
//! alarm watchdog. Run by the `*/5` cron, by `POST /internal/v1/maintenance`
//! (the DLQ worker's `maintenance/run`), and, for the sweep alone, by its
//! continuation messages on `hookrelay-control` while a step leaves work.
//!
//! The sweep and the watchdog each have their own `Result`: a failing
//! watchdog (an alert endpoint that is down) never blocks the sweep.

pub mod continuation;
pub mod sweep;
pub mod watchdog;

use hookrelay_core::config::RelayConfig;
use hookrelay_core::metrics::Component;
use hookrelay_core::retention::continuation::SWEEP_LEASE_MS;
use hookrelay_platform::db::error_message;
use hookrelay_platform::db::sweep_state::{self, Lease};
use hookrelay_platform::{log, now_ms};
use serde_json::{json, Map, Value};
use worker::{D1Database, Env};

/// Runs a sweep step and the watchdog at `now_ms`, and answers DESIGN §4's
/// `maintenance/run` shape. A step that left work starts a new chain of
/// continuation messages (any older chain goes stale).
pub async fn run(env: &Env, cfg: &RelayConfig, now_ms: i64) -> worker::Result<Value> {
    let swept = sweep_and_continue(env, cfg, now_ms).await;
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
    // The watchdog ran either way (it watches D1 too); a failed sweep is
    // still this run's answer.
    let mut answer = swept?;
    answer["alarms"] = json!({"fired": fired, "resolved": resolved});
    answer["took_ms"] = json!(self::now_ms() - now_ms);
    Ok(answer)
}

async fn sweep_and_continue(env: &Env, cfg: &RelayConfig, now_ms: i64) -> worker::Result<Value> {
    let db = env.d1("DB")?;
    let answer = sweep_once(env, &db, cfg, now_ms).await?;
    if busy(&answer) {
        return Ok(answer);
    }
    // A new chain either way, so an older chain's messages go stale.
    let generation = sweep_state::new_generation(&db).await?;
    if answer["more"].as_bool() == Some(true) {
        continuation::send(env, generation).await?;
    }
    Ok(answer)
}

/// The answer's field that says another step held the sweep's lease
/// (when it expires, unix ms): this run swept nothing.
const BUSY_UNTIL: &str = "busy_until";

/// Whether `answer` came from a run that found another step holding the
/// lease. That step records its own result and continues its own chain.
pub fn busy(answer: &Value) -> bool {
    answer.get(BUSY_UNTIL).is_some()
}

/// One sweep step, recorded in `sweep_state` (its answer, or its error),
/// answered without the alarms. Steps never overlap: while another holds
/// the lease this one does nothing and answers `busy_until` (and `more`,
/// since work may be left).
pub async fn sweep_once(
    env: &Env,
    db: &D1Database,
    cfg: &RelayConfig,
    now_ms: i64,
) -> worker::Result<Value> {
    let start = match sweep_state::start(db, now_ms, SWEEP_LEASE_MS).await? {
        Lease::Held(start) => start,
        Lease::Busy { until } => {
            log::info(
                Component::Sweep,
                "sweep_busy",
                log::fields! {"lease_until": until},
            );
            return Ok(
                json!({"archived": {}, "objects_written": 0, "more": true, BUSY_UNTIL: until}),
            );
        }
    };
    let lease_until = start.lease_until;
    match sweep::step(env, db, cfg.retention, now_ms, start).await {
        Ok(done) => finished(db, now_ms, lease_until, &done).await,
        Err(e) => {
            failed(db, now_ms, lease_until, &e).await;
            Err(e)
        }
    }
}

/// Records a step that finished, releasing its lease; its answer.
async fn finished(
    db: &D1Database,
    now_ms: i64,
    lease_until: i64,
    done: &sweep::StepDone,
) -> worker::Result<Value> {
    let r = &done.report;
    let archived: Map<String, Value> = r
        .archived
        .iter()
        .map(|(t, n)| (t.as_str().to_string(), json!(n)))
        .collect();
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
            archived: done.fresh,
            lease_until,
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

/// Records a step that failed, releasing its lease (a record that fails
/// too is logged; the lease then expires by itself).
async fn failed(db: &D1Database, now_ms: i64, lease_until: i64, e: &worker::Error) {
    let message = error_message(e);
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
        archived: (0, 0),
        lease_until,
    };
    if let Err(e2) = sweep_state::record(db, &record).await {
        log::error(
            Component::Sweep,
            "sweep_record_failed",
            log::fields! {"err": error_message(&e2)},
        );
    }
}
