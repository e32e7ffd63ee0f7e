//! The relay worker (`hookrelay`).
//!
//! - `fetch`: `POST /webhooks/{source}` verifies and enqueues; `GET /healthz`;
//!   `/api/v1/admin/…` and the console at `/admin…` are passed to the DLQ
//!   worker through a service binding.
//! - `queue`: consumes `webhooks` and ingests each event into D1 exactly once;
//!   consumes `hookrelay-control`, whose messages drain parked events and
//!   continue the retention sweep.
//! - `scheduled`: the safety net that resends lost drain chains (`*/1`), and
//!   maintenance, a retention sweep step and the alarm watchdog (`*/5`).
//!
//! Every decision is made in `hookrelay-core`; this crate moves bytes.
mod alerting;
mod config_cache;
mod consumers;
mod fetch_entry;
mod maintenance;
mod queue_entry;
mod routes;

use hookrelay_core::metrics::Component;
use hookrelay_platform::fetch_answer::respond;
use hookrelay_platform::parking::drain_resume;
use hookrelay_platform::raw_http;
use wasm_bindgen::{JsCast, JsValue};
use worker::wasm_bindgen_futures::future_to_promise;
use worker::{web_sys, Context, Env, Request, Response, Result, ScheduleContext, ScheduledEvent};

/// The crate version, reported by `/healthz`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Routes one request (`fetch_entry::fetch` is the export): the answer, or
/// a promise of it. The ingest route continues its own promises (see
/// `ingest_route`); every other route is a future.
fn route(
    req: web_sys::Request,
    env: Env,
    ctx: worker::worker_sys::Context,
) -> std::result::Result<JsValue, JsValue> {
    // Checked here, not inside the spawned future: a request that finds
    // nothing due then costs no future at all.
    if drain_resume::claim_due() {
        let resume_env = env.clone();
        Context::new(ctx.clone().unchecked_into())
            .wait_until(async move { maintenance::periodic::check(&resume_env).await });
    }
    let path = raw_http::path(&req);
    if let Some(source) = path.strip_prefix("/webhooks/") {
        return routes::ingest::begin(req, env, ctx.into(), source.trim_end_matches('/'));
    }
    Ok(future_to_promise(async move {
        let routed = other_route(Request::from(req), &env, &path).await;
        respond(
            routed.map(Into::into),
            Component::Relay,
            routes::responses::internal,
        )
    })
    .into())
}

/// Every route but the ingest, on `worker::Request`.
async fn other_route(req: Request, env: &Env, path: &str) -> Result<Response> {
    if path == "/healthz" {
        hookrelay_platform::body::drain(&req).await;
        return routes::health::handle(&req, env);
    }
    if path == hookrelay_core::replay::call::PATH {
        return routes::internal_replay::handle(req, env).await;
    }
    if path == hookrelay_core::maintenance::schedule::MAINTENANCE_PATH {
        return routes::internal_maintenance::handle(req, env).await;
    }
    if path == hookrelay_core::deliver::pull_figures::PATH {
        return routes::internal_pull_figures::handle(req, env).await;
    }
    if alerting::internal_alarm_routes::serves(path) {
        return alerting::internal_alarm_routes::handle(req, env, path).await;
    }
    if routes::pull::serves(path) {
        return routes::pull::handle(req, env, path).await;
    }
    if routes::admin_proxy::forwards(path) {
        return routes::admin_proxy::handle(req, env).await;
    }
    if path == routes::test_fault::PATH && routes::test_fault::armed(env) {
        routes::test_fault::handle();
    }
    routes::responses::error(
        404,
        "NOT_FOUND",
        "no such route; webhooks go to POST /webhooks/{source}",
    )
}

/// Cron (`[triggers]` in wrangler.toml), dispatched by its expression
/// (`cron_duties`; a bare `/__scheduled` runs both): the drain's safety
/// net, and maintenance (a sweep step and the watchdog)
/// (`fetch_entry::scheduled` is the export).
async fn scheduled(event: ScheduledEvent, env: Env, _ctx: ScheduleContext) {
    let duties = hookrelay_core::maintenance::schedule::cron_duties(&event.cron());
    if duties.drain_safety_net {
        maintenance::periodic::check(&env).await;
    }
    if duties.maintenance {
        let config = config_cache::relay_config(&env);
        // A bad config was logged naming its key when it was loaded.
        if let Ok(cfg) = &*config {
            // The run logs its own failures; the next cron resumes.
            let _ = maintenance::run(&env, cfg, hookrelay_platform::now_ms()).await;
        }
    }
}
