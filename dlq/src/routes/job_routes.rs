//! `/api/v1/admin/jobs…`: create (or dry-run), list, read and steer jobs.

use super::list_page::list_page;
use super::{ApiError, ApiResult};
use crate::jobs::{create, steer};
use hookrelay_core::admin::query::{parse_page, Cursor};
use hookrelay_core::jobs::parse_job_request;
use hookrelay_platform::db::jobs;
use serde_json::Value;
use worker::{D1Database, Env, Method};

/// Dispatches `/jobs…` (the body already read; empty is `{}`).
#[allow(clippy::too_many_arguments)]
pub async fn route(
    method: &Method,
    segments: &[&str],
    params: &[(String, String)],
    body: &Value,
    env: &Env,
    db: &D1Database,
    actor: &str,
    now: i64,
) -> ApiResult {
    match (method, segments) {
        (Method::Post, ["jobs"]) => post(db, env, body, actor, now).await,
        (Method::Get, ["jobs"]) => list(db, params).await,
        (Method::Get, ["jobs", id]) => get(db, id).await,
        (Method::Post, ["jobs", id, cmd]) => {
            if let Some(field) = body.as_object().and_then(|o| o.keys().next()) {
                return Err(ApiError::BadRequest {
                    param: field.clone(),
                    message: "unknown field; job commands take no body".into(),
                });
            }
            command(db, env, id, cmd, now).await
        }
        (_, ["jobs"]) => Err(ApiError::MethodNotAllowed("GET, POST")),
        (_, ["jobs", _]) => Err(ApiError::MethodNotAllowed("GET")),
        (_, ["jobs", _, _]) => Err(ApiError::MethodNotAllowed("POST")),
        _ => Err(ApiError::NotFound("no such job route".into())),
    }
}

/// `POST /jobs`.
pub async fn post(db: &D1Database, env: &Env, body: &Value, actor: &str, now: i64) -> ApiResult {
    let req = parse_job_request(body)?;
    Ok(create::create(db, env, req, actor, now).await?)
}

/// Whether a `POST /jobs` answer is an accepted job (`202`) rather than a
/// dry run (`200`).
pub fn is_accepted_job(data: &Value) -> bool {
    data.get("id").is_some_and(Value::is_string)
}

/// `GET /jobs`: newest first.
pub async fn list(db: &D1Database, params: &[(String, String)]) -> ApiResult {
    if let Some((k, _)) = params.iter().find(|(k, _)| k != "limit" && k != "cursor") {
        return Err(ApiError::BadRequest {
            param: k.clone(),
            message: "unknown query parameter; this route accepts limit, cursor".into(),
        });
    }
    let page = parse_page(params)?;
    let rows = jobs::list(db, page.cursor.as_ref(), page.limit).await?;
    let views: Vec<Value> = rows.iter().map(|j| create::view(j, &[])).collect();
    Ok(list_page(views, page.limit, |v| Cursor {
        at_ms: v["created_at"].as_i64().unwrap_or(0),
        id: v["id"].as_str().unwrap_or_default().to_string(),
    }))
}

/// `GET /jobs/:id`.
pub async fn get(db: &D1Database, id: &str) -> ApiResult {
    Ok(create::describe(db, id).await?)
}

/// `POST /jobs/:id/{approve,pause,resume,cancel}`.
pub async fn command(db: &D1Database, env: &Env, id: &str, segment: &str, now: i64) -> ApiResult {
    Ok(steer::steer(db, env, id, segment, now).await?)
}
