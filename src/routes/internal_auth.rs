//! Proof that a call to an `/internal/v1/…` route comes from the DLQ worker.
//!
//! The DLQ worker reaches the relay through its `RELAY` service binding,
//! which lands on this worker's public fetch handler, so every internal
//! route checks a short-lived token signed by `RELAY_INTERNAL_SECRET`
//! (`core/src/admin/internal_token.rs`) before it looks at the body.

use crate::config_cache::relay_config;
use crate::routes::responses;
use hookrelay_core::admin::internal_token::{authorize_internal, SECRET_NAME};
use hookrelay_core::config::RelayConfig;
use hookrelay_core::metrics::Component;
use hookrelay_core::support::env::ConfigError;
use hookrelay_platform::{body, log, now_ms};
use std::rc::Rc;
use worker::{Env, Method, Request, Response, Result};

/// An internal call that passed: the relay's configuration, loaded.
pub struct Admitted(Rc<std::result::Result<RelayConfig, ConfigError>>);

impl Admitted {
    /// The configuration the call runs with.
    pub fn config(&self) -> &RelayConfig {
        (*self.0)
            .as_ref()
            .expect("admit answers an invalid configuration itself")
    }
}

/// Admits an internal call, or answers it with its body drained: the
/// relay's configuration is invalid, or the caller is not proven
/// ([`refuse_caller`]).
pub async fn admit(
    req: &Request,
    env: &Env,
    what: &str,
) -> std::result::Result<Admitted, Result<Response>> {
    let config = relay_config(env);
    let refused = match &*config {
        Ok(cfg) => refuse_caller(req, cfg, what),
        Err(e) => Some(responses::config_invalid(e)),
    };
    match refused {
        None => Ok(Admitted(config)),
        Some(answer) => {
            body::drain(req).await;
            Err(answer)
        }
    }
}

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
