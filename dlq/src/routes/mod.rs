//! The admin API, under `/api/v1/admin/`. Every route needs an HS256 bearer
//! token with `role: "admin"`; authentication runs before routing, so an
//! unauthenticated caller learns nothing about which routes exist.

mod activity_route;
mod alerts_route;
mod api_error;
mod audit_route;
mod batch_reader;
mod dead_letter_routes;
mod entry_action_routes;
mod event_story_route;
mod events_route;
mod job_routes;
mod list_page;
mod maintenance_routes;
mod replay_routes;
mod restore_route;
mod stats_lifecycle;
mod stats_route;
mod whoami_route;

use crate::config_cache::config;
use crate::entries::relay_client::Relay;
pub use api_error::{success, success_with_status, ApiError, ApiResult};
use hookrelay_core::admin::jwt::Claims;
use hookrelay_core::admin::token_identity::authorize_admin;
use hookrelay_core::metrics::Component;
use hookrelay_platform::token_keys::EnvTokenKeys;
use hookrelay_platform::{log, now_ms};
use worker::{Env, Method, Request, Response, Result};

/// Query parameters as pairs, decoded the way `Url::query_pairs` decodes
/// them. Read from the URL text instead of `req.url()`, which parses the
/// whole URL with the `url` crate: ~29 KB of wasm for this one call. The
/// runtime hands the URL over already parsed and normalized.
pub fn query_pairs(req: &Request) -> Vec<(String, String)> {
    let url = req.inner().url();
    let query = url.split_once('?').map_or("", |(_, q)| q);
    let query = query.split_once('#').map_or(query, |(q, _)| q);
    form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect()
}

/// A JSON request body, or a 400 naming what is wrong.
pub async fn json_body(req: &mut Request) -> std::result::Result<serde_json::Value, ApiError> {
    let text = req.text().await.map_err(|_| ApiError::BadRequest {
        param: "body".into(),
        message: "could not be read".into(),
    })?;
    if text.trim().is_empty() {
        return Ok(serde_json::Value::Object(Default::default()));
    }
    serde_json::from_str(&text).map_err(|e| ApiError::BadRequest {
        param: "body".into(),
        message: format!(
            "is not valid JSON (line {}, column {})",
            e.line(),
            e.column()
        ),
    })
}

/// Refuses any field in a body that takes none.
fn no_fields(body: &serde_json::Value) -> std::result::Result<(), ApiError> {
    match body.as_object().and_then(|o| o.keys().next()) {
        Some(field) => Err(ApiError::BadRequest {
            param: field.clone(),
            message: "is not a field of this route, which takes none".into(),
        }),
        None if body.is_object() => Ok(()),
        None => Err(ApiError::BadRequest {
            param: "body".into(),
            message: "must be a JSON object".into(),
        }),
    }
}

/// Handles one admin request.
pub async fn handle(mut req: Request, env: &Env) -> Result<Response> {
    let cfg = config(env);
    let cfg = match &*cfg {
        Ok(c) => c,
        Err(e) => {
            hookrelay_platform::body::drain(&req).await;
            return ApiError::Config(e.clone()).into_response();
        }
    };
    let now = now_ms();
    // Before the admin check: it answers any valid token, a pull one too.
    if whoami_route::is_whoami(&req) {
        return whoami_route::answer(&req, env, cfg, now).await;
    }
    let header = req.headers().get("authorization")?;
    let keys = EnvTokenKeys::new(&cfg.admin_key, env);
    let claims = match authorize_admin(header.as_deref(), &keys, now.div_euclid(1000)) {
        Ok(c) => c,
        Err(e) => {
            hookrelay_platform::body::drain(&req).await;
            log::warn(
                Component::Admin,
                "auth_refused",
                log::fields! {"status": e.status(), "code": e.code(), "path": req.path()},
            );
            return ApiError::Auth(e).into_response();
        }
    };
    let path = req.path();
    let segments: Vec<&str> = path
        .trim_start_matches("/api/v1/admin/")
        .trim_end_matches('/')
        .split('/')
        .collect();
    let Ok(db) = env.d1("DB") else {
        hookrelay_platform::body::drain(&req).await;
        return ApiError::BindingMissing("DB").into_response();
    };
    let method = req.method();
    let ctx = RouteContext {
        db: &db,
        cfg,
        env,
        claims: &claims,
        now,
    };
    let result = route(&mut req, &method, &segments, &ctx).await;
    // `POST /jobs` answers 202 for a job it accepted (200 for a dry run).
    let accepted = matches!((&method, segments.as_slice()), (Method::Post, ["jobs"]));
    if !req.inner().body_used() {
        hookrelay_platform::body::drain(&req).await;
    }
    hookrelay_platform::metrics::flush(env).await;
    match result {
        Ok(data) if accepted && job_routes::is_accepted_job(&data) => {
            success_with_status(data, 202)
        }
        Ok(data) => success(data),
        Err(e) => e.into_response(),
    }
}

/// What every route handler may need.
struct RouteContext<'a> {
    db: &'a worker::D1Database,
    cfg: &'a crate::config_cache::Config,
    env: &'a Env,
    claims: &'a Claims,
    now: i64,
}

impl RouteContext<'_> {
    fn relay(&self) -> std::result::Result<Relay, ApiError> {
        Relay::from_env(self.env, &self.cfg.internal_key).map_err(ApiError::Unavailable)
    }
}

async fn route(
    req: &mut Request,
    method: &Method,
    segments: &[&str],
    c: &RouteContext<'_>,
) -> ApiResult {
    let actor = c.claims.sub.clone().unwrap_or_else(|| "admin".to_string());
    if !takes_query(method, segments) {
        // Strict everywhere: a parameter a route does not know is refused,
        // never ignored.
        hookrelay_core::admin::query::refuse_any(&query_pairs(req))?;
    }
    match segments {
        ["webhook-dlq", ..] | ["webhooks", "dlq", ..] => {
            dead_letter_route(req, method, segments, c, &actor).await
        }
        _ => other_route(req, method, segments, c, &actor).await,
    }
}

/// The dead-letter routes: listing, one entry, its actions, replays.
async fn dead_letter_route(
    req: &mut Request,
    method: &Method,
    segments: &[&str],
    c: &RouteContext<'_>,
    actor: &str,
) -> ApiResult {
    let (db, cfg, now) = (c.db, c.cfg, c.now);
    let caller = entry_action_routes::Caller {
        actor,
        now_ms: now,
        env: c.env,
    };
    match (method, segments) {
        (Method::Get, ["webhook-dlq"]) => dead_letter_routes::list(db, &query_pairs(req)).await,
        (Method::Get, ["webhook-dlq", "stats"]) => {
            let relay = Relay::from_env(c.env, &cfg.internal_key);
            stats_route::stats(db, &cfg.dlq.retention, relay, now).await
        }
        // Before `webhook-dlq/:id`, which would read `groups` as an id.
        (Method::Get, ["webhook-dlq", "groups"]) => {
            dead_letter_routes::groups(db, &query_pairs(req)).await
        }
        (Method::Get, ["webhook-dlq", id]) => dead_letter_routes::get(db, id).await,
        (Method::Post, ["webhook-dlq", id, segment @ ("archive" | "unarchive" | "discard")]) => {
            let body = json_body(req).await?;
            entry_action_routes::decide(db, id, segment, &body, &caller).await
        }
        (Method::Post, ["webhook-dlq", id, "restore"]) => {
            let body = json_body(req).await?;
            restore_route::restore(db, id, &body, cfg.dlq.capacity, &caller).await
        }
        (Method::Post, ["webhook-dlq", id, "replay"]) => {
            let body = json_body(req).await?;
            replay_routes::replay_one(db, cfg, &c.relay()?, id, &body, actor, now).await
        }
        (Method::Post, ["webhooks", "dlq", "replay-all"]) => {
            let body = json_body(req).await?;
            replay_routes::replay_all(db, cfg, &c.relay()?, &body, actor, now).await
        }
        _ => Err(refused(segments)),
    }
}

/// Every other route: events, jobs, audit, maintenance, the archive.
async fn other_route(
    req: &mut Request,
    method: &Method,
    segments: &[&str],
    c: &RouteContext<'_>,
    actor: &str,
) -> ApiResult {
    let (db, now) = (c.db, c.now);
    match (method, segments) {
        (Method::Get, ["events"]) => events_route::list(db, &query_pairs(req)).await,
        (Method::Get, ["activity"]) => activity_route::list(db, &query_pairs(req), now).await,
        (Method::Get, ["events", event_id]) => {
            event_story_route::story(db, event_id, &query_pairs(req)).await
        }
        (_, ["jobs", ..]) => {
            let body = json_body(req).await?;
            job_routes::route(
                method,
                segments,
                &query_pairs(req),
                &body,
                c.env,
                db,
                actor,
                now,
            )
            .await
        }
        (Method::Get, ["audit"]) => {
            let keep = c.cfg.dlq.retention.dlq_retention_ms;
            audit_route::list(db, &query_pairs(req), keep, now).await
        }
        (Method::Post, ["maintenance", "run"]) => {
            json_body(req).await.and_then(|b| no_fields(&b))?;
            maintenance_routes::run(&c.relay()?).await
        }
        (Method::Get, ["archive"]) => maintenance_routes::archive(c.env, &query_pairs(req)).await,
        (Method::Get, ["alerts"]) => alerts_route::list(c).await,
        (Method::Post, ["alerts", "test"]) => {
            let body = json_body(req).await?;
            alerts_route::test(c, &body, actor).await
        }
        _ => Err(refused(segments)),
    }
}

/// The routes that read query parameters (each parses them strictly).
fn takes_query(method: &Method, segments: &[&str]) -> bool {
    matches!(
        (method, segments),
        (
            Method::Get,
            ["webhook-dlq"]
                | ["webhook-dlq", "groups"]
                | ["events"]
                | ["events", _]
                | ["activity"]
                | ["audit"]
                | ["jobs"]
                | ["archive"]
        )
    )
}

/// A route that exists with another method (405, naming it), or none (404).
fn refused(segments: &[&str]) -> ApiError {
    match segments {
        ["webhook-dlq"]
        | ["webhook-dlq", "stats"]
        | ["webhook-dlq", _]
        | ["events"]
        | ["events", _]
        | ["activity"]
        | ["audit"]
        | ["archive"]
        | ["alerts"] => ApiError::MethodNotAllowed("GET"),
        ["webhook-dlq", _, "replay" | "archive" | "unarchive" | "discard" | "restore"]
        | ["alerts", "test"]
        | ["webhooks", "dlq", "replay-all"]
        | ["maintenance", "run"] => ApiError::MethodNotAllowed("POST"),
        _ => ApiError::NotFound("no such admin route; see README for the routes".into()),
    }
}
