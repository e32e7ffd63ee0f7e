//! JSON responses. Errors use the admin API's shape,
//! `{"status":"error","error":{"code","message"}}`, so clients parse one form.

use hookrelay_core::receive::front_door::Rejection;
use hookrelay_core::support::env::ConfigError;
use serde_json::json;
use worker::{Response, Result};

/// An error response with a status, a stable code and a message.
pub fn error(status: u16, code: &str, message: &str) -> Result<Response> {
    Ok(Response::from_json(
        &json!({"status": "error", "error": {"code": code, "message": message}}),
    )?
    .with_status(status))
}

/// The response for a refused webhook.
pub fn rejection(r: &Rejection) -> Result<Response> {
    let resp = error(r.status(), r.code(), &r.message())?;
    match r {
        Rejection::MethodNotAllowed => resp.headers().set("Allow", "POST")?,
        Rejection::SignatureRateLimited { retry_after_s } => resp
            .headers()
            .set("Retry-After", &retry_after_s.to_string())?,
        _ => {}
    }
    Ok(resp)
}

/// The response when the configuration is invalid: nothing can be verified.
pub fn config_invalid(e: &ConfigError) -> Result<Response> {
    error(500, "CONFIG_INVALID", &e.to_string())
}

/// 500 for a request that failed inside the relay, naming what failed.
pub fn internal(what: &str) -> Result<Response> {
    error(
        500,
        "INTERNAL",
        &format!("the relay failed to handle this request: {what}; retry, and if it persists check the relay's logs (wrangler tail)"),
    )
}

/// 503 with `Retry-After`: the event was not kept, so the provider must retry.
pub fn unavailable(what: &str, retry_after_s: u32) -> Result<Response> {
    let resp = error(
        503,
        "UNAVAILABLE",
        &format!("{what}; the event was not accepted, retry after {retry_after_s}s"),
    )?;
    resp.headers()
        .set("Retry-After", &retry_after_s.to_string())?;
    Ok(resp)
}
