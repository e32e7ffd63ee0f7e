//! `GET /webhook-dlq` (list), `GET /webhook-dlq/groups` (by error
//! signature) and `GET /webhook-dlq/:id` (one envelope).

use super::list_page::list_page;
use super::{ApiError, ApiResult};
use hookrelay_core::admin_query::{
    parse_dead_letter_filter, parse_group_filter, parse_page, Cursor, MAX_GROUPS,
};
use hookrelay_platform::db::dead_letters;
use serde_json::{json, Value};
use worker::D1Database;

/// Lists entries newest first, filtered by status, class, code and source.
pub async fn list(db: &D1Database, params: &[(String, String)]) -> ApiResult {
    let filter = parse_dead_letter_filter(params)?;
    let page = parse_page(params)?;
    let rows = dead_letters::list(db, &filter, page.cursor.as_ref(), page.limit).await?;
    Ok(list_page(rows, page.limit, |r| Cursor {
        at_ms: r.created_at,
        id: r.id.clone(),
    }))
}

/// One entry: its listing fields plus the whole envelope.
pub async fn get(db: &D1Database, id: &str) -> ApiResult {
    let row = dead_letters::get(db, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no dead-letter entry '{id}'")))?;
    let envelope: Value = serde_json::from_str(&row.envelope).unwrap_or(Value::Null);
    let mut data = serde_json::to_value(&row.summary).unwrap_or(Value::Null);
    data["envelope"] = envelope;
    Ok(data)
}

/// Entries grouped by error signature, largest first: "what is failing?"
pub async fn groups(db: &D1Database, params: &[(String, String)]) -> ApiResult {
    let filter = parse_group_filter(params)?;
    let items = dead_letters::groups(db, &filter, MAX_GROUPS).await?;
    Ok(json!({ "items": items }))
}
