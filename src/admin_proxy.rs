//! `/api/v1/admin/…` lives in the DLQ worker; the relay forwards it through
//! the `DLQ` service binding so the admin API shares the relay's origin.

use crate::responses;
use hookrelay_core::metrics::Component;
use hookrelay_platform::log;
use worker::{Env, Request, Response, Result};

/// Forwards the request unchanged and returns the DLQ worker's answer.
pub async fn handle(req: Request, env: &Env) -> Result<Response> {
    let Ok(dlq) = env.service("DLQ") else {
        return responses::unavailable("the DLQ service binding is not configured", 30);
    };
    match dlq.fetch_request(req).await {
        Ok(resp) => Ok(resp),
        Err(e) => {
            log::error(
                Component::Relay,
                "admin_proxy_failed",
                log::fields! {"err": hookrelay_platform::db::error_message(&e)},
            );
            responses::unavailable("the DLQ worker did not answer", 5)
        }
    }
}
