//! `GET /api/v1/admin/whoami`: who the bearer token speaks for, answered
//! for any valid token of a known role (admin or pull), where every other
//! admin route lets in only an admin. It runs before the admin check, so
//! a client (`hookrelay login`) can check a token it was handed, and it
//! reads nothing but the token. The rules are `core/src/token_identity.rs`.

use super::{query_pairs, success, ApiError};
use crate::config_cache::Config;
use hookrelay_core::admin::query::refuse_any;
use hookrelay_core::admin::token_identity::identify;
use hookrelay_platform::token_keys::EnvTokenKeys;
use worker::{Env, Method, Request, Response, Result};

/// The route's path.
const PATH: &str = "/api/v1/admin/whoami";

/// Whether `req` is for this route (with or without a trailing slash).
pub fn is_whoami(req: &Request) -> bool {
    req.path().trim_end_matches('/') == PATH
}

/// Answers `{"sub", "role", "destination"?, "exp"}`, or why the token is
/// refused (401, or 403 for a genuine token of another role).
pub async fn answer(req: &Request, env: &Env, cfg: &Config, now_ms: i64) -> Result<Response> {
    hookrelay_platform::body::drain(req).await;
    if req.method() != Method::Get {
        return ApiError::MethodNotAllowed("GET").into_response();
    }
    let header = req.headers().get("authorization")?;
    let keys = EnvTokenKeys::new(&cfg.admin_key, env);
    let identity = match identify(header.as_deref(), &keys, now_ms.div_euclid(1000)) {
        Ok(identity) => identity,
        Err(e) => return ApiError::Auth(e).into_response(),
    };
    if let Err(e) = refuse_any(&query_pairs(req)) {
        return ApiError::from(e).into_response();
    }
    success(serde_json::to_value(identity)?)
}
