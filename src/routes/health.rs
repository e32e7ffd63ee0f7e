//! `GET /healthz`: version, configured source and destination names and
//! the retry schedule; never a secret (nor a destination's URL, which may
//! hold a token in its path).

use crate::{config_cache::relay_config, routes::responses, VERSION};
use serde_json::json;
use worker::{Env, Method, Request, Response, Result};

/// Answers the health check.
pub fn handle(req: &Request, env: &Env) -> Result<Response> {
    if req.method() != Method::Get && req.method() != Method::Head {
        let resp = responses::error(405, "METHOD_NOT_ALLOWED", "use GET /healthz")?;
        resp.headers().set("Allow", "GET, HEAD")?;
        return Ok(resp);
    }
    match &*relay_config(env) {
        Ok(config) => Response::from_json(&json!({
            "status": "ok",
            "version": VERSION,
            "sources": config.sources.keys().collect::<Vec<_>>(),
            "destinations": config.delivery.destination_names().collect::<Vec<_>>(),
            "retry_delays_s": config.retry.delays_s(),
        })),
        Err(e) => responses::config_invalid(e),
    }
}
