//! `GET /audit`: the replay audit log, newest first, optionally for one entry.

use super::list_page::list_page;
use super::ApiResult;
use hookrelay_core::admin_query::{parse_audit_filter, parse_page, Cursor};
use hookrelay_platform::db::replay_audit;
use worker::D1Database;

/// Lists audit records.
pub async fn list(db: &D1Database, params: &[(String, String)]) -> ApiResult {
    let filter = parse_audit_filter(params)?;
    let page = parse_page(params)?;
    let rows = replay_audit::list(db, &filter, page.cursor.as_ref(), page.limit).await?;
    Ok(list_page(rows, page.limit, |r| Cursor {
        at_ms: r.at,
        id: r.id.to_string(),
    }))
}
