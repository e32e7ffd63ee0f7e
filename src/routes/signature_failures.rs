//! The relay's side of the `signature_failures` alarm: each request refused
//! with a 401 is counted in this isolate's tally, and the tally is written
//! to D1 in a `wait_until`, so the 401 is never delayed and no failure
//! costs a D1 write of its own. When to write is core's decision
//! (`core/src/receive/signature_tally.rs`); this only applies it.

use hookrelay_core::metrics::Component;
use hookrelay_core::receive::signature_tally::{Next, Row, Tally};
use hookrelay_platform::db::{error_message, signature_failures};
use hookrelay_platform::{log, now_ms};
use std::cell::RefCell;
use std::time::Duration;
use wasm_bindgen::{JsCast, JsValue};
use worker::{worker_sys, Context, Delay, Env};

thread_local! {
    static TALLY: RefCell<Tally> = RefCell::new(Tally::default());
}

/// Counts one request to `source` that failed its signature check at
/// `now_ms`, and writes the tally now or later as core says, in the
/// request's `wait_until` (`ctx`, the fetch handler's context).
pub fn record(env: &Env, ctx: &JsValue, source: &str, now_ms: i64) {
    let next = TALLY.with(|t| t.borrow_mut().record(source, now_ms));
    let ctx = Context::new(ctx.clone().unchecked_into::<worker_sys::Context>());
    let env = env.clone();
    match next {
        Next::Wait => {}
        Next::Flush(rows) => ctx.wait_until(async move { write(&env, rows, now_ms).await }),
        Next::FlushAt(at_ms) => ctx.wait_until(async move {
            let wait = u64::try_from(at_ms.saturating_sub(now_ms)).unwrap_or(0);
            Delay::from(Duration::from_millis(wait)).await;
            // A timer may wake a little early: it was set for `at_ms`.
            let now = self::now_ms().max(at_ms);
            let rows = TALLY.with(|t| t.borrow_mut().take_flush(now));
            if let Some(rows) = rows {
                write(&env, rows, now).await;
            }
        }),
    }
}

/// One flush's write; rows whose write failed go back into the tally, to
/// go out with the next.
async fn write(env: &Env, rows: Vec<Row>, now_ms: i64) {
    let written = match env.d1("DB") {
        Ok(db) => signature_failures::add(&db, &rows, now_ms).await,
        Err(e) => Err(e),
    };
    if let Err(e) = written {
        log::warn(
            Component::Relay,
            "signature_failures_write_failed",
            log::fields! {"rows": rows.len(), "err": error_message(&e)},
        );
        TALLY.with(|t| t.borrow_mut().restore(rows));
    }
}
