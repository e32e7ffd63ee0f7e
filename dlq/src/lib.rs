//! The DLQ worker (`hookrelay-dlq`).
//!
//! - `queue`: consumes `webhooks-dlq`, stores one envelope per dead letter
//!   in D1 and logs it. A D1 failure retries the message: a dead letter is
//!   never acked before it is stored.
//! - `fetch`: the admin API under `/api/v1/admin/…`, reached through the
//!   relay's service binding.

mod dead_letter_store;
mod queue_entry;
mod triage;

use serde_json::json;
use worker::{event, Context, Env, Request, Response, Result};

#[event(fetch)]
async fn fetch(req: Request, _env: Env, _ctx: Context) -> Result<Response> {
    console_error_panic_hook::set_once();
    let _ = req;
    Ok(Response::from_json(&json!({
        "status": "error",
        "error": {"code": "NOT_FOUND", "message": "no such admin route"}
    }))?
    .with_status(404))
}
