//! Proof that a call to an `/internal/v1/…` route comes from the DLQ worker.
//!
//! The DLQ worker reaches the relay through its `RELAY` service binding,
//! which lands on this worker's public fetch handler, so every internal
//! route checks a short-lived token signed by `RELAY_INTERNAL_SECRET`
//! (`core/src/internal_token.rs`) before it looks at the body.

use crate::responses;
use hookrelay_core::config::{ConfigError, RelayConfig};
use hookrelay_core::internal_token::{authorize_internal, SECRET_NAME};
use hookrelay_core::metrics::Component;
use hookrelay_platform::{body, log, now_ms};
use worker::{Method, Request, Response, Result};

/// The answer for a caller that may not use an internal route, if it may
/// not. `what` names what the route does, for the missing-secret message
/// ("replays", "maintenance runs").
pub fn refuse_caller(req: &Request, cfg: &RelayConfig, what: &str) -> Option<Result<Response>> {
    if req.method() != Method::Post {
        return Some(responses::error(405, "METHOD_NOT_ALLOWED", "use POST"));
    }
    let Some(key) = cfg.internal_key.as_deref() else {
        return Some(responses::unavailable(
            &format!("{SECRET_NAME} is not set on the relay, so {what} cannot be proven to come from the DLQ worker; set it in both workers"),
            60,
        ));
    };
    let header = req.headers().get("authorization").ok().flatten();
    match authorize_internal(header.as_deref(), key, now_ms().div_euclid(1000)) {
        Ok(_) => None,
        Err(e) => {
            log::warn(
                Component::Relay,
                "internal_call_refused",
                log::fields! {"code": e.code(), "path": req.path()},
            );
            Some(responses::error(
                e.status(),
                e.code(),
                "this route only answers the DLQ worker's own calls",
            ))
        }
    }
}

/// The configuration an internal route runs with, once the caller is
/// proven; otherwise the answer (the body drained): the configuration's
/// error, or [`refuse_caller`]'s refusal.
pub async fn admit<'a>(
    req: &Request,
    config: &'a std::result::Result<RelayConfig, ConfigError>,
    what: &str,
) -> std::result::Result<&'a RelayConfig, Result<Response>> {
    let refused = match config {
        Ok(cfg) => match refuse_caller(req, cfg, what) {
            None => return Ok(cfg),
            Some(refused) => refused,
        },
        Err(e) => responses::config_invalid(e),
    };
    body::drain(req).await;
    Err(refused)
}
