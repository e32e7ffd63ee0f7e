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

use worker::{Context, Env, Request, Response, Result, ScheduleContext, ScheduledEvent};

/// The crate version, reported by `/healthz`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Routes one request (`fetch_entry::fetch` is the export).
async fn route(mut req: Request, env: Env, ctx: Context) -> Result<Response> {
    let resume_env = env.clone();
    ctx.wait_until(
        async move { hookrelay_platform::drain::resume::resume_if_due(&resume_env).await },
    );
    let path = req.path();
    if path == "/healthz" {
        hookrelay_platform::body::drain(&mut req).await;
        return health_route::handle(&req, &env);
    }
    if let Some(source) = path.strip_prefix("/webhooks/") {
        let source = source.trim_end_matches('/').to_string();
        let response = ingest_route::handle(req, &env, &source).await;
        // The counter write must not delay the provider's answer.
        ctx.wait_until(async move { hookrelay_platform::metrics::flush(&env).await });
        return response;
    }
    if path == hookrelay_core::replay_call::PATH {
        return internal_replay_route::handle(req, &env).await;
    }
    if path.starts_with("/api/v1/admin/") || path == "/api/v1/admin" {
        return admin_proxy::handle(req, &env).await;
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
