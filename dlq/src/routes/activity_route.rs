//! `GET /api/v1/admin/activity`: what happened, oldest first, after a
//! position: events accepted, deliveries settled, dead letters stored, for
//! `hookrelay tail` and the console. The query's rules and the next cursor
//! are the core's (`core/src/admin_query/activity.rs`); the one read is
//! `platform/src/db/activity.rs`.

use super::ApiResult;
use hookrelay_core::admin::query::{activity_horizon, next_activity_cursor, parse_activity_query};
use hookrelay_platform::db::activity;
use serde_json::json;
use worker::D1Database;

/// One page: `{"items": […], "next_cursor"}`. The cursor is never null: a
/// follower polls with it, and it moves on only past what was read.
pub async fn list(db: &D1Database, params: &[(String, String)], now_ms: i64) -> ApiResult {
    let query = parse_activity_query(params)?;
    let horizon = activity_horizon(now_ms);
    let mut items = activity::read(db, &query, horizon).await?;
    let more = items.len() > query.limit as usize;
    items.truncate(query.limit as usize);
    let last = items.last().map(activity::ActivityItem::position);
    let next = next_activity_cursor(&query, last.as_ref(), more, horizon);
    Ok(json!({"items": items, "next_cursor": next}))
}
