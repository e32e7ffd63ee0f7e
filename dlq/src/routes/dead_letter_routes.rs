//! `GET /webhook-dlq` (list), `GET /webhook-dlq/groups` (by error
//! signature) and `GET /webhook-dlq/:id` (one envelope). An entry that left
//! D1 for the archive answers from its tombstone as `evicted`, and
//! `?status=evicted` lists tombstones. Each entry and tombstone answers
//! its `"actions"`, decided by the rules the action routes apply.

use super::list_page::list_page;
use super::{ApiError, ApiResult};
use hookrelay_core::admin::query::{
    parse_dead_letter_listing, parse_group_filter, parse_page, parse_time_range, Cursor,
    DeadLetterListing, EVICTED_STATUS, MAX_GROUPS,
};
use hookrelay_core::dead_letter::entry_action::entry_actions;
use hookrelay_core::retention::restore::tombstone_actions;
use hookrelay_platform::db::dead_letters::{self, EntrySummary};
use hookrelay_platform::db::tombstones::{self, TombstoneRow};
use serde_json::{json, Value};
use worker::D1Database;

/// Lists entries newest first, filtered by status, class, code, source and
/// when they were dead-lettered (`since`, `until`); tombstones for
/// `status=evicted`, newest first, with the same cursor.
pub async fn list(db: &D1Database, params: &[(String, String)]) -> ApiResult {
    let listing = parse_dead_letter_listing(params)?;
    let page = parse_page(params)?;
    let filter = match listing {
        DeadLetterListing::Entries(filter) => filter,
        DeadLetterListing::Tombstones => {
            let rows = tombstones::list(db, page.cursor.as_ref(), page.limit).await?;
            let rows: Vec<Value> = rows.iter().map(evicted).collect();
            return Ok(list_page(rows, page.limit, |r| Cursor {
                at_ms: r["evicted_at"].as_i64().unwrap_or_default(),
                id: r["id"].as_str().unwrap_or_default().to_string(),
            }));
        }
    };
    let range = parse_time_range(params)?;
    let rows = dead_letters::list(db, &filter, &range, page.cursor.as_ref(), page.limit).await?;
    let rows: Vec<Value> = rows.iter().map(summary).collect();
    Ok(list_page(rows, page.limit, |r| Cursor {
        at_ms: r["created_at"].as_i64().unwrap_or_default(),
        id: r["id"].as_str().unwrap_or_default().to_string(),
    }))
}

/// An entry's listing fields and the actions its status allows.
fn summary(s: &EntrySummary) -> Value {
    let mut v = serde_json::to_value(s).unwrap_or(Value::Null);
    v["actions"] = json!(entry_actions(s.status));
    v
}

/// A tombstone as the API answers it: `"status": "evicted"`, with its
/// cause, archive key and, for a swept entry, the status it had.
fn evicted(t: &TombstoneRow) -> Value {
    let mut v = serde_json::to_value(t).unwrap_or(Value::Null);
    v["status"] = Value::from(EVICTED_STATUS);
    v["actions"] = json!(tombstone_actions(&t.tombstone()));
    v
}

/// One entry: its listing fields plus the whole envelope; for an entry
/// that left D1, its tombstone.
pub async fn get(db: &D1Database, id: &str) -> ApiResult {
    let Some(row) = dead_letters::get(db, id).await? else {
        return match tombstones::get(db, id).await? {
            Some(t) => Ok(evicted(&t)),
            None => Err(ApiError::NotFound(format!("no dead-letter entry '{id}'"))),
        };
    };
    let envelope: Value = serde_json::from_str(&row.envelope).unwrap_or(Value::Null);
    let mut data = summary(&row.summary);
    data["envelope"] = envelope;
    Ok(data)
}

/// Entries grouped by error signature, largest first: "what is failing?"
pub async fn groups(db: &D1Database, params: &[(String, String)]) -> ApiResult {
    let filter = parse_group_filter(params)?;
    let range = parse_time_range(params)?;
    let items = dead_letters::groups(db, &filter, &range, MAX_GROUPS).await?;
    Ok(json!({ "items": items }))
}
