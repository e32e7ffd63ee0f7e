//! `GET /audit`: the replay audit log, newest first, optionally for one entry.

use super::list_page::list_page;
use super::{cursor_param, limit_param, ApiResult};
use hookrelay_core::admin_query::Cursor;
use hookrelay_platform::db::replay_audit;
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
    let rows = replay_audit::list(db, entry, cursor.as_ref(), limit).await?;
    Ok(list_page(rows, limit, |r| Cursor {
        at_ms: r.at,
        id: r.id.to_string(),
    }))
}
