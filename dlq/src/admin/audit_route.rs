//! `GET /audit`: the replay audit log, newest first, optionally for one entry.

use super::{cursor_param, limit_param, page, ApiResult};
use crate::admin_store;
use hookrelay_core::admin_query::Cursor;
use serde_json::json;
use worker::D1Database;

/// Lists audit records.
pub async fn list(db: &D1Database, params: &[(String, String)]) -> ApiResult {
    let limit = limit_param(params)?;
    let cursor = cursor_param(params)?;
    let entry = params
        .iter()
        .find(|(k, _)| k == "entry_id")
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty());
    let rows = admin_store::list_audit(db, entry, cursor.as_ref(), limit).await?;
    let (items, next_cursor) = page(rows, limit, |r| Cursor {
        at_ms: r.at,
        id: r.id.to_string(),
    });
    Ok(json!({"items": items, "next_cursor": next_cursor}))
}
