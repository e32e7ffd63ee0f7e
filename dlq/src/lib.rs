//! The DLQ worker (`hookrelay-dlq`).
//!
//! - `queue`: consumes `webhooks-dlq`, stores one envelope per dead letter
//!   in D1 and logs it. A D1 failure retries the message: a dead letter is
//!   never acked before it is stored.
//! - `fetch`: the admin API under `/api/v1/admin/…`, reached through the
//!   relay's service binding. The console (`/admin`) is static assets
//!   (`dlq/console/`, `[assets]` in dlq/wrangler.toml), served before this
//!   code runs.
mod config_cache;
mod consumers;
mod entries;
mod fetch_entry;
mod jobs;
mod queue_entry;
mod routes;

use worker::{Context, Env, Request, Response, Result};

/// Routes one request (`fetch_entry::fetch` is the export).
async fn route(req: Request, env: Env, ctx: Context) -> Result<Response> {
    let resume_env = env.clone();
    ctx.wait_until(async move { resume(&resume_env).await });
    if req.path().starts_with("/api/v1/admin/") {
        return routes::handle(req, &env).await;
    }
    routes::ApiError::NotFound(
        "the DLQ worker serves /api/v1/admin/… and the console's files under /admin only".into(),
    )
    .into_response()
}

/// Resumes jobs whose step message was lost (at most once per 30 s per isolate).
async fn resume(env: &Env) {
    if let Ok(db) = env.d1("DB") {
        jobs::resume::resume_stalled(&db, env).await;
    }
}
