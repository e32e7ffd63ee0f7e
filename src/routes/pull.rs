//! `POST /api/v1/pull/{destination}` and `POST /api/v1/pull/{destination}/ack`
//! (DESIGN §4, "Pulling"): a pull destination's consumer leases its due
//! deliveries and acks each outcome. Served by the relay, which holds
//! `DESTINATIONS`, apart from `/api/v1/admin` so a proxy in front of the
//! admin API never blocks a consumer. The token check is the core's
//! (`admin::token_identity::may_pull`), the bodies' and the settlements'
//! rules are `deliver::pull`'s; this file moves bytes, and counts what it
//! answered (`pull`, `pull_leased`, `pull_ack` by state).

use crate::config_cache::relay_config;
use crate::routes::responses;
use hookrelay_core::admin::token_identity::may_pull;
use hookrelay_core::deliver::pull::{self, BodyError};
use hookrelay_core::metrics::{Component, Metric, MetricName};
use hookrelay_platform::pipeline::pull as glue;
use hookrelay_platform::token_keys::EnvTokenKeys;
use hookrelay_platform::{body, db::error_message, log, metrics, now_ms};
use serde::Serialize;
use serde_json::json;
use worker::{Env, Method, Request, Response, Result};

/// Where the pull API lives.
pub const PREFIX: &str = "/api/v1/pull/";

/// Whether `path` is the pull API's.
pub fn serves(path: &str) -> bool {
    path.starts_with(PREFIX)
}

/// Handles one pull or ack.
pub async fn handle(mut req: Request, env: &Env, path: &str) -> Result<Response> {
    let rest = path[PREFIX.len()..].trim_end_matches('/');
    let (name, acking) = match rest.strip_suffix("/ack") {
        Some(name) => (name, true),
        None => (rest, false),
    };
    if let Some(answer) = refused(&req, env, name).await {
        body::drain(&req).await;
        return answer;
    }
    let config = relay_config(env);
    let Ok(cfg) = &*config else {
        return responses::internal("the configuration");
    };
    let Some(settings) = cfg.delivery.destination(name).and_then(|d| d.pull()) else {
        body::drain(&req).await;
        return responses::error(
            404,
            "NOT_FOUND",
            &format!("no pull destination is named '{name}'; declare it in DESTINATIONS as {{\"pull\": {{}}}}"),
        );
    };
    let text = req.text().await.unwrap_or_default();
    let Ok(db) = env.d1("DB") else {
        return responses::internal("the D1 binding DB");
    };
    let now = now_ms();
    if acking {
        let acks = match pull::parse_ack(&text) {
            Ok(a) => a,
            Err(e) => return bad_request(&e),
        };
        let answered = glue::ack((env, &db), name, &acks, &cfg.retry, now).await;
        if let Ok(results) = &answered {
            count_acks(results);
        }
        metrics::flush(env).await;
        return success(answered.map(|results| json!({ "results": results })), name);
    }
    let max = match pull::parse_pull(&text) {
        Ok(m) => m,
        Err(e) => return bad_request(&e),
    };
    let answered = glue::pull(&db, (name, settings), (max, fresh_lease_id()), now).await;
    if let Ok(answer) = &answered {
        count_pull(name, answer);
    }
    // Nothing counted (an empty pull) writes nothing: the flush is free.
    metrics::flush(env).await;
    success(answered, name)
}

/// A pull that leased any: one `pull`, and `pull_leased` per delivery
/// (by its source), both under the destination. An empty pull, the
/// consumer's poll, is not counted: it costs one D1 read and no write.
fn count_pull(destination: &str, answer: &glue::PullAnswer) {
    if answer.items.is_empty() {
        return;
    }
    metrics::count(
        Metric::new(MetricName::Pull, Component::Relay).detail(destination),
        1,
    );
    for item in &answer.items {
        metrics::count(
            Metric::new(MetricName::PullLeased, Component::Relay)
                .source(&item.source)
                .detail(destination),
            1,
        );
    }
}

/// Each ack result, by the state it answered (`pull_ack:delivered`, …).
fn count_acks(results: &[glue::AckAnswer]) {
    for r in results {
        metrics::count(
            Metric::new(MetricName::PullAck, Component::Relay).detail(r.state),
            1,
        );
    }
}

/// The answer for a caller that may not pull `destination`, if it may not:
/// 405 for another method, else the token's 401 or 403.
async fn refused(req: &Request, env: &Env, destination: &str) -> Option<Result<Response>> {
    if req.method() != Method::Post {
        return Some(responses::error(405, "METHOD_NOT_ALLOWED", "use POST"));
    }
    let config = relay_config(env);
    let key = match &*config {
        Ok(cfg) => cfg.admin_key.as_deref(),
        Err(e) => return Some(responses::config_invalid(e)),
    };
    // A pull token may be signed with its destination's own secret.
    let keys = key.map(|k| EnvTokenKeys::new(k, env));
    let header = req.headers().get("authorization").ok().flatten();
    match may_pull(
        header.as_deref(),
        keys.as_ref(),
        destination,
        now_ms().div_euclid(1000),
    ) {
        Ok(_) => None,
        Err(e) => {
            log::warn(
                Component::Relay,
                "pull_refused",
                log::fields! {"status": e.status(), "code": e.code(), "destination": destination},
            );
            Some(responses::error(e.status(), e.code(), &e.message()))
        }
    }
}

fn bad_request(e: &BodyError) -> Result<Response> {
    let message = if e.field.is_empty() {
        e.message.clone()
    } else {
        format!("{}: {}", e.field, e.message)
    };
    responses::error(400, "BAD_REQUEST", &message)
}

fn success<T: Serialize>(answered: worker::Result<T>, destination: &str) -> Result<Response> {
    match answered {
        Ok(data) => Response::from_json(&json!({"status": "success", "data": data})),
        Err(e) => {
            log::error(
                Component::Relay,
                "pull_failed",
                log::fields! {"destination": destination, "err": error_message(&e)},
            );
            responses::unavailable("D1 could not be read or written", 1)
        }
    }
}

/// A fresh lease id: 16 bytes from the runtime's cryptographic source.
fn fresh_lease_id() -> String {
    let mut bytes = [0u8; 16];
    hookrelay_platform::webcrypto::random_bytes(&mut bytes);
    pull::lease_id(&bytes)
}
