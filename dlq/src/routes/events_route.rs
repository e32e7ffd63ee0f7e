//! `GET /events`: "did this webhook arrive?" Ingested events with their
//! duplicate count and delivery status, filtered by source, idempotency key
//! and time.

use super::list_page::list_page;
use super::ApiResult;
use hookrelay_core::admin::query::{parse_event_filter, parse_page, Cursor};
use hookrelay_platform::db::events;
use worker::D1Database;

/// Lists events newest first.
pub async fn list(db: &D1Database, params: &[(String, String)]) -> ApiResult {
    let filter = parse_event_filter(params)?;
    let page = parse_page(params)?;
    let rows = events::list(db, &filter, page.cursor.as_ref(), page.limit).await?;
    Ok(list_page(rows, page.limit, |r| Cursor {
        at_ms: r.ingested_at,
        id: r.event_id.clone(),
    }))
}
