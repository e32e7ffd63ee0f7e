//! `HOOKRELAY_TEST_FAULTS`, the test-only fault switch (never deployed:
//! `npm run deploy` refuses it): a comma-separated list of faults that make
//! a real failure path run end to end in Miniflare, where nothing else can
//! make D1 fail at one precise write.
//!
//! - `panic`: `GET /__test/panic` panics (the relay's `routes::test_fault`).
//! - `record_after_2xx`: the recorder's write of a batch that holds a 2xx
//!   fails, in place and on its retry, so the outcome travels on as a
//!   `deliveries` message (`crate::pipeline::record`).
//! - `record_carried`: that message's own record fails too (the double
//!   fault: the lease runs out, and the periodic check counts it).
//! - `pull_figures_hang`: the relay's `POST /internal/v1/pull-figures`
//!   answers only after 30 s, as a hung relay would, so the stats' wait
//!   for it is shown to end (`hookrelay_core::deliver::pull_figures::ANSWER_WITHIN_MS`).

use worker::Env;

/// Whether `fault` is armed in `env`.
pub fn armed(env: &Env, fault: &str) -> bool {
    env.var("HOOKRELAY_TEST_FAULTS")
        .map(|v| v.to_string().split(',').any(|f| f.trim() == fault))
        .unwrap_or(false)
}
