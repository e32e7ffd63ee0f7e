//! The DLQ worker (`hookrelay-dlq`).
//!
//! - `queue`: consumes `webhooks-dlq`, stores one envelope per dead letter
//!   in D1 and logs it. A D1 failure retries the message: a dead letter is
//!   never acked before it is stored.
//! - `fetch`: the admin API under `/api/v1/admin/…`, reached through the
//!   relay's service binding.

mod admin;
mod config_cache;
mod decisions;
mod queue_entry;
mod relay_client;
mod replay;
mod triage;

use worker::{event, Context, Env, Request, Response, Result};

#[event(fetch)]
async fn fetch(req: Request, env: Env, _ctx: Context) -> Result<Response> {
    console_error_panic_hook::set_once();
    if req.path().starts_with("/api/v1/admin/") {
        return admin::handle(req, &env).await;
    }
    admin::ApiError::NotFound("the DLQ worker serves /api/v1/admin/… only".into()).into_response()
}
