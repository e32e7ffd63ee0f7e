//! Counting, and flushing the counts to Analytics Engine and D1.
//!
//! Code anywhere in an invocation calls [`count`]; the entry point calls
//! [`flush`] once at the end, which writes one Analytics Engine data point
//! per metric (the `METRICS` binding; skipped when it is not bound) and adds
//! the totals to D1 `counters` in one round trip. The buffer is per isolate;
//! whichever flush runs first writes what is buffered, so every increment is
//! written exactly once even when invocations interleave. The relay's fetch
//! handler uses the two halves instead, [`flush_analytics`] inline and
//! [`write_d1`] only when a D1 total is left, so an accepted webhook's
//! counter costs no future and no D1 round trip.

use crate::db::{counters, error_message};
use crate::log;
use hookrelay_core::metrics::{Component, Metric, Tally};
use std::cell::RefCell;
use wasm_bindgen::prelude::*;
use worker::Env;

#[wasm_bindgen(inline_js = r#"
export function write_point(env, binding, blobs, n) {
  const dataset = env[binding];
  if (dataset !== undefined) dataset.writeDataPoint({ indexes: [blobs[0]], blobs, doubles: [n] });
}
"#)]
extern "C" {
    /// One data point, indexed by the metric name (`blobs[0]`), in one
    /// call; nothing when the binding is absent. worker's builder takes
    /// about twenty calls into JS per point and reads the binding's
    /// constructor name, on every accepted webhook.
    #[wasm_bindgen(catch)]
    fn write_point(env: &Env, binding: &str, blobs: Vec<String>, n: f64) -> Result<(), JsValue>;
}

thread_local! {
    static PENDING: RefCell<Tally> = RefCell::new(Tally::default());
}

/// Adds `by` to `metric`.
pub fn count(metric: Metric, by: u64) {
    PENDING.with(|t| t.borrow_mut().add(metric, by));
}

/// Writes everything counted so far.
pub async fn flush(env: &Env) {
    if let Some(totals) = flush_analytics(env) {
        write_d1(env, &totals).await;
    }
}

/// Takes everything counted so far and writes its Analytics Engine data
/// points now (the binding's write is synchronous). Returns the D1 totals
/// still to write, if there are any, for the caller to hand to
/// [`write_d1`]: the request path thus spawns a future only when it has a
/// D1 write to make, which the counters of an accepted webhook never need.
pub fn flush_analytics(env: &Env) -> Option<Vec<(String, u64)>> {
    let tally = PENDING.with(|t| t.borrow_mut().take());
    if tally.is_empty() {
        return None;
    }
    for (metric, n) in tally.points() {
        if let Err(e) = write_point(env, "METRICS", metric.blobs().to_vec(), n as f64) {
            log::warn(
                Component::Metrics,
                "analytics_write_failed",
                log::fields! {"metric": metric.name, "err": error_message(&e.into())},
            );
        }
    }
    let totals = tally.d1_totals();
    // The common path (ingest, duplicates) is counted by D1 itself; then
    // there is nothing to write, and no round trip to make.
    (!totals.is_empty()).then_some(totals)
}

/// Adds `totals` (from [`flush_analytics`]) to D1 `counters` in one round trip.
pub async fn write_d1(env: &Env, totals: &[(String, u64)]) {
    let Ok(db) = env.d1("DB") else { return };
    let statements: Result<Vec<_>, _> = totals
        .iter()
        .map(|(k, n)| counters::bump(&db, k, *n as i64))
        .collect();
    let written = match statements {
        Ok(s) => crate::db::batch(&db, s).await.map(|_| ()),
        Err(e) => Err(e),
    };
    if let Err(e) = written {
        log::warn(
            Component::Metrics,
            "counter_write_failed",
            log::fields! {"err": error_message(&e)},
        );
    }
}
