//! The relay worker (`hookrelay`).
//!
//! - `fetch`: `POST /webhooks/{source}` verifies and enqueues; `GET /healthz`;
//!   `/api/v1/admin/…` is passed to the DLQ worker through a service binding.
//! - `queue`: consumes `webhooks` and ingests each event into D1 exactly once;
//!   consumes `hookrelay-control`, whose messages drain parked events.
//! - `scheduled`: the safety net that resends lost drain chains.
//!
//! Every decision is made in `hookrelay-core`; this crate moves bytes.

mod admin_proxy;
mod config_cache;
mod consumer;
mod drain_consumer;
mod fetch_entry;
mod health_route;
mod ingest_route;
mod internal_replay_route;
mod queue_entry;
mod responses;

use hookrelay_platform::{drain, metrics, raw_http};
use worker::{web_sys, Context, Env, Request, Response, Result, ScheduleContext, ScheduledEvent};

/// The crate version, reported by `/healthz`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Routes one request (`fetch_entry::fetch` is the export).
async fn route(req: web_sys::Request, env: Env, ctx: Context) -> Result<web_sys::Response> {
    // Checked here, not inside the spawned future: a request that finds
    // nothing due then costs no future at all.
    if drain::resume::claim_due() {
        let resume_env = env.clone();
        ctx.wait_until(async move { drain::resume::resume(&resume_env).await });
    }
    let path = raw_http::path(&req);
    if let Some(source) = path.strip_prefix("/webhooks/") {
        let response = ingest_route::handle(req, &env, source.trim_end_matches('/')).await;
        // Analytics Engine's write is synchronous and adds nothing to the
        // answer's wait; only a D1 total (never the ingest's own counters)
        // is left to a `wait_until`.
        if let Some(totals) = metrics::flush_analytics(&env) {
            ctx.wait_until(async move { metrics::write_d1(&env, &totals).await });
        }
        return response;
    }
    other_route(Request::from(req), &env, &path)
        .await
        .map(Into::into)
}

/// Every route but the ingest, on `worker::Request`.
async fn other_route(mut req: Request, env: &Env, path: &str) -> Result<Response> {
    if path == "/healthz" {
        hookrelay_platform::body::drain(&mut req).await;
        return health_route::handle(&req, env);
    }
    if path == hookrelay_core::replay_call::PATH {
        return internal_replay_route::handle(req, env).await;
    }
    if path.starts_with("/api/v1/admin/") || path == "/api/v1/admin" {
        return admin_proxy::handle(req, env).await;
    }
    responses::error(
        404,
        "NOT_FOUND",
        "no such route; webhooks go to POST /webhooks/{source}",
    )
}

/// Cron (`[triggers]` in wrangler.toml): resends drain chains that were lost
/// (`fetch_entry::scheduled` is the export).
async fn scheduled(_event: ScheduledEvent, env: Env, _ctx: ScheduleContext) {
    hookrelay_platform::drain::resume::resume(&env).await;
}
