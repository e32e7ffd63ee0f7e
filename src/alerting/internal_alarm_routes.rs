//! The internal alarm routes the DLQ worker calls through its `RELAY`
//! binding, proven like replays (`crate::routes::internal_auth`):
//! - `POST /internal/v1/dlq-cannot-store`: the DLQ consumer could not store
//!   a dead letter (body `cannot_store::StoreFailure`); answers the alarm's
//!   state. Nothing here needs D1, which is what fails.
//! - `POST /internal/v1/alerts/test`: sends a test alert (body
//!   `{"actor"}`) and answers how the receiver answered.
//! - `POST /internal/v1/alerts/receiver`: whether `ALERT_WEBHOOK_URL` is
//!   set (only the relay holds it), for `GET /api/v1/admin/alerts`.

use super::{alert_post, cannot_store_object as cannot_store};
use crate::{routes::internal_auth, routes::responses};
use hookrelay_core::alarms::alert_payload::Alert;
use hookrelay_core::alarms::cannot_store::{Report, StoreFailure};
use hookrelay_core::alarms::{ALERT_RECEIVER_PATH, ALERT_TEST_PATH, CANNOT_STORE_PATH};
use hookrelay_core::config::RelayConfig;
use hookrelay_core::support::subrequests::Budget;
use hookrelay_platform::{metrics, now_ms};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::json;
use worker::{Env, Request, Response, Result};

/// Whether `path` is one of these routes.
pub fn serves(path: &str) -> bool {
    [CANNOT_STORE_PATH, ALERT_TEST_PATH, ALERT_RECEIVER_PATH].contains(&path)
}

/// `POST /internal/v1/alerts/test`'s body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TestCall {
    /// Who asked (the admin token's subject).
    actor: String,
}

/// Handles one call to a path [`serves`] accepts.
pub async fn handle(mut req: Request, env: &Env, path: &str) -> Result<Response> {
    let admitted = match internal_auth::admit(&req, env, "alarm calls").await {
        Ok(a) => a,
        Err(answer) => return answer,
    };
    let cfg = admitted.config();
    let text = req.text().await.unwrap_or_default();
    let answer = match path {
        CANNOT_STORE_PATH => match parse::<StoreFailure>(&text) {
            Ok(f) => cannot_store(env, cfg, f).await,
            Err(bad) => bad,
        },
        ALERT_TEST_PATH => match parse::<TestCall>(&text) {
            Ok(call) => test_alert(cfg, &call.actor).await,
            Err(bad) => bad,
        },
        _ => Response::from_json(&json!({"receiver_configured": cfg.alarms.webhook_url.is_some()})),
    };
    metrics::flush(env).await;
    answer
}

fn parse<T: DeserializeOwned>(text: &str) -> std::result::Result<T, Result<Response>> {
    serde_json::from_str(text).map_err(|e| {
        responses::error(
            400,
            "BAD_REQUEST",
            &format!("the call's body is not valid: {e}"),
        )
    })
}

async fn cannot_store(env: &Env, cfg: &RelayConfig, f: StoreFailure) -> Result<Response> {
    // The report is an invocation of its own.
    let mut budget = Budget::per_invocation();
    let report = Report::Failure(f);
    let applied = cannot_store::apply(env, cfg, &report, now_ms(), &mut budget).await?;
    let state = applied.state.as_ref();
    Response::from_json(&json!({
        "state": state.map(|s| s.state.as_str()),
        "since": state.map(|s| s.since),
        "fired": applied.fired,
    }))
}

async fn test_alert(cfg: &RelayConfig, actor: &str) -> Result<Response> {
    if cfg.alarms.webhook_url.is_none() {
        return responses::error(
            409,
            "NO_RECEIVER",
            "ALERT_WEBHOOK_URL is not set, so there is no receiver to test; set it with `wrangler secret put ALERT_WEBHOOK_URL` (locally: npm start -- --var ALERT_WEBHOOK_URL:…)",
        );
    }
    let now = now_ms();
    let alert = Alert::test(now, actor);
    let posted = alert_post::send(cfg, &alert, now).await;
    Response::from_json(&json!({
        "sent": posted.result.is_ok(),
        "status": posted.status,
        "error": posted.result.err(),
        "operation_id": alert.operation_id(),
    }))
}
