//! `/api/v1/admin/…` and the console at `/admin…` live in the DLQ worker;
//! the relay forwards them through the `DLQ` service binding so the admin
//! API and the console share the relay's origin.

use crate::routes::responses;
use hookrelay_core::metrics::Component;
use hookrelay_platform::log;
use worker::{Env, Request, Response, Result};

/// Whether `path` belongs to the DLQ worker: the admin API, or the console
/// (static assets of the DLQ worker, see dlq/wrangler.toml `[assets]`).
pub fn forwards(path: &str) -> bool {
    let under = |prefix: &str| {
        path.strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    };
    under("/api/v1/admin") || under("/admin")
}

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
