//! `POST /internal/v1/maintenance`: the DLQ worker's
//! `POST /api/v1/admin/maintenance/run`, carried out here, where the sweep
//! and the watchdog run (the relay holds `SOURCES` and the alert secrets).
//! The caller is proven like a replay (`internal_auth`); the body, if any,
//! must be an empty JSON object.

use crate::{maintenance, routes::internal_auth, routes::responses};
use hookrelay_platform::now_ms;
use worker::{Env, Request, Response, Result};

/// Handles one maintenance call: the run's answer, or a 500 naming the
/// part that failed (`MAINTENANCE_FAILED`: the sweep step;
/// `WATCHDOG_FAILED`: the alarm watchdog).
pub async fn handle(mut req: Request, env: &Env) -> Result<Response> {
    let admitted = match internal_auth::admit(&req, env, "maintenance runs").await {
        Ok(a) => a,
        Err(answer) => return answer,
    };
    let cfg = admitted.config();
    let text = req.text().await.unwrap_or_default();
    if !text.trim().is_empty() && serde_json::from_str::<EmptyBody>(&text).is_err() {
        return responses::error(400, "BAD_REQUEST", "the maintenance call takes no fields");
    }
    match maintenance::run(env, cfg, now_ms()).await {
        Ok(answer) => Response::from_json(&answer),
        Err(failed) => responses::error(500, failed.code, &failed.message),
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct EmptyBody {}
