//! Maintenance (DESIGN §5): the alarm watchdog, the backfill of legacy
//! parked events, the deletion of queue destinations' large bodies past
//! their hold (`bodies`), then one bounded retention sweep step. Run by the `*/5` cron, by `POST /internal/v1/maintenance`
//! (the DLQ worker's `maintenance/run`), and, for the sweep alone, by its
//! continuation messages on `hookrelay-control` while a step leaves work.
//!
//! Each part runs under its own lease (`lease`, `core::retention::lease`):
//! runs that start together take turns per part, and a sweep step that
//! holds the sweep's lease never stops the watchdog. The watchdog goes
//! first, so the alarms always get their share of the invocation's
//! subrequest budget (`core::subrequests`, one per invocation, passed
//! down) and the sweep takes what is left; a watchdog waiting on a slow
//! receiver holds the sweep up for one `ALERT_TIMEOUT` at most. Each part
//! has its own `Result`: a failing watchdog never blocks the sweep, and a
//! run with a failed part answers an error naming it.

mod bodies;
pub mod continuation;
mod lease;
mod legacy;
pub mod periodic;
pub mod sweep;
pub mod watchdog;

use hookrelay_core::config::RelayConfig;
use hookrelay_core::maintenance::lease::Lease;
use hookrelay_core::metrics::Component;
use hookrelay_core::support::subrequests::{Budget, OverBudget};
use hookrelay_platform::db::{batch, error_message, sweep_state, Rows};
use hookrelay_platform::{log, now_ms};
use serde_json::{json, Map, Value};
use worker::{D1Database, D1PreparedStatement, Env};

/// Subrequests a sweep step leaves for what follows it: one batch that
/// records the run, starts or claims a generation and gives the lease
/// back, then the continuation's send (after a failed step: the record,
/// then the lease given back).
const CALLS_AFTER_STEP: u32 = 2;

/// A run with a part that failed: the code and the message its answer
/// carries (`internal_maintenance_route` answers it as a 500).
#[derive(Debug)]
pub struct RunFailed {
    /// `MAINTENANCE_FAILED` (the sweep step) or `WATCHDOG_FAILED`.
    pub code: &'static str,
    /// What failed, and what happens next.
    pub message: String,
}

/// What the watchdog did in this run.
enum Alarms {
    Ran(watchdog::AlarmsRun),
    /// Another watchdog holds its lease (until then): that run watches.
    Busy(Option<i64>),
    Failed(worker::Error),
}

/// Runs the watchdog and a sweep step at `now_ms`, and answers DESIGN §4's
/// `maintenance/run` shape. A step that left work starts a new chain of
/// continuation messages (any older chain goes stale). While another run
/// holds the sweep's lease the step does nothing and answers `"more": true`
/// with `"busy_until"` (when that lease expires); likewise `"alarms"` holds
/// `"busy_until"` while another watchdog runs.
pub async fn run(env: &Env, cfg: &RelayConfig, now_ms: i64) -> Result<Value, RunFailed> {
    let mut budget = Budget::per_invocation();
    let alarms = watch(env, cfg, now_ms, &mut budget).await;
    // The backfill of parked events from before deliveries: a few D1
    // calls and one drain per source, so a small share of the budget.
    if budget.spend(4).is_ok() {
        if let Ok(db) = env.d1("DB") {
            legacy::step(env, &db).await;
        }
    }
    // Queue destinations' large bodies past their hold: one D1 read, one
    // R2 delete, one D1 delete. A failure is logged; the next run retries.
    if budget.spend(3).is_ok() {
        if let Ok(db) = env.d1("DB") {
            if let Err(e) = bodies::step(env, &db, now_ms).await {
                log::error(
                    Component::Sweep,
                    "destination_bodies_failed",
                    log::fields! {"err": error_message(&e), "next": "the next run retries"},
                );
            }
        }
    }
    let swept = sweep_turn(env, cfg, now_ms, &mut budget).await;
    log::info(
        Component::Sweep,
        "maintenance_run",
        log::fields! {"subrequests": budget.spent(), "budget": hookrelay_core::support::subrequests::INVOCATION_SUBREQUESTS},
    );
    let alarms = match alarms {
        Alarms::Ran(r) => json!({"fired": r.fired, "resolved": r.resolved}),
        Alarms::Busy(until) => json!({"fired": [], "resolved": [], "busy_until": until}),
        Alarms::Failed(e) => {
            let sweep = match &swept {
                Ok(answer) => format!("the sweep step ran: {answer}"),
                Err(e) => format!("the sweep step failed too: {}", error_message(e)),
            };
            return Err(RunFailed {
                code: "WATCHDOG_FAILED",
                message: format!(
                    "the alarm watchdog failed: {}; the next run retries it ({sweep})",
                    error_message(&e)
                ),
            });
        }
    };
    let mut answer = swept.map_err(|e| RunFailed {
        code: "MAINTENANCE_FAILED",
        message: format!(
            "the sweep step failed: {}; the next run resumes it",
            error_message(&e)
        ),
    })?;
    answer["alarms"] = alarms;
    answer["took_ms"] = json!(self::now_ms() - now_ms);
    Ok(answer)
}

/// The watchdog under its own lease.
async fn watch(env: &Env, cfg: &RelayConfig, now_ms: i64, budget: &mut Budget) -> Alarms {
    let held = match lease::take(env, Lease::Watchdog, now_ms, budget).await {
        Ok(lease::Turn::Held(held)) => Some(held),
        Ok(lease::Turn::Busy(until)) => return Alarms::Busy(until),
        // D1 is failing: the watchdog still runs (the cannot-store alarm
        // lives in R2), and its D1 part fails and says so.
        Err(_) => None,
    };
    let ran = watchdog::run(env, cfg, now_ms, budget).await;
    if let Some(held) = held {
        lease::release(env, held, budget).await;
    }
    match ran {
        Ok(r) => Alarms::Ran(r),
        Err(e) => {
            log::error(
                Component::Watchdog,
                "watchdog_failed",
                log::fields! {"err": error_message(&e), "next": "the next run retries"},
            );
            Alarms::Failed(e)
        }
    }
}

/// A sweep step under the sweep's lease, with what the budget has left.
async fn sweep_turn(
    env: &Env,
    cfg: &RelayConfig,
    now_ms: i64,
    budget: &mut Budget,
) -> worker::Result<Value> {
    let held = match lease::take(env, Lease::Sweep, now_ms, budget).await? {
        lease::Turn::Held(held) => held,
        lease::Turn::Busy(busy_until) => {
            return Ok(
                json!({"archived": {}, "objects_written": 0, "more": true, "busy_until": busy_until}),
            )
        }
    };
    let db = env.d1("DB")?;
    // A new chain either way, so an older chain's messages go stale.
    let after = vec![
        sweep_state::claim_statement(&db, None)?,
        held.release_statement(&db)?,
    ];
    let (answer, after) = match sweep_once(env, &db, cfg, now_ms, budget, after).await {
        Ok(done) => done,
        Err(e) => {
            lease::release(env, held, budget).await;
            return Err(e);
        }
    };
    let generation = sweep_state::read_new_generation(&after[0])?;
    if answer["more"].as_bool() == Some(true) {
        budget.spend(1).map_err(over_budget)?;
        continuation::send(env, generation).await?;
    }
    Ok(answer)
}

/// One sweep step, within what `budget` leaves but [`CALLS_AFTER_STEP`].
/// A step that succeeds is recorded in `sweep_state` in one batch with
/// `after` (the caller's next writes, ending with its lease given back),
/// and answers with their results; one that fails records its error alone
/// (`after` is dropped: the caller gives its lease back itself).
pub async fn sweep_once(
    env: &Env,
    db: &D1Database,
    cfg: &RelayConfig,
    now_ms: i64,
    budget: &mut Budget,
    after: Vec<D1PreparedStatement>,
) -> worker::Result<(Value, Vec<Rows>)> {
    let allowance = budget.allot(CALLS_AFTER_STEP);
    let stepped = sweep::step(env, db, cfg.retention, now_ms, allowance).await;
    // The record below is one of the calls kept back.
    budget.spend(1).map_err(over_budget)?;
    match stepped {
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
            let record = sweep_state::record_statement(
                db,
                &sweep_state::RunRecord {
                    at: now_ms,
                    result: Some(&text),
                    error: None,
                    size_bytes: Some(r.size_bytes),
                    size_swept_through: r.size_swept_through,
                },
            )?;
            let mut statements = vec![record];
            statements.extend(after);
            let expected = statements.len();
            let mut results = batch(db, statements).await?;
            if results.len() != expected {
                return Err(worker::Error::RustError(format!(
                    "D1 answered {} result sets for the sweep's {expected} closing writes; the next run carries on",
                    results.len()
                )));
            }
            results.remove(0);
            log::info(
                Component::Sweep,
                "sweep_step",
                log::fields! {"objects": r.objects_written, "more": r.more},
            );
            Ok((answer, results))
        }
        Err(e) => {
            record_failure(db, now_ms, &e).await;
            Err(e)
        }
    }
}

/// Logs a failed step and records its error in `sweep_state`.
async fn record_failure(db: &D1Database, now_ms: i64, e: &worker::Error) {
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
    };
    if let Err(e2) = sweep_state::record(db, &record).await {
        log::error(
            Component::Sweep,
            "sweep_record_failed",
            log::fields! {"err": error_message(&e2)},
        );
    }
}

/// A spent budget, as the error a step answers.
fn over_budget(e: OverBudget) -> worker::Error {
    worker::Error::RustError(e.to_string())
}
