//! `POST /maintenance/run` and `GET /archive` (DESIGN §4, §5).
//!
//! Maintenance runs on the relay (it holds `SOURCES` and the alert
//! secrets, and owns the cron); this worker hands the call over through
//! `RELAY` and answers the relay's result as `data`. The archive listing
//! reads R2 here: it needs no relay configuration.

use super::{ApiError, ApiResult};
use crate::entries::relay_client::Relay;
use hookrelay_core::admin::query::{next_archive_cursor, parse_archive_listing};
use hookrelay_core::retention::archive_key::ArchiveKey;
use hookrelay_platform::archive_bucket;
use serde_json::{json, Value};
use worker::Env;

/// Objects in one page of the archive listing at most.
const PAGE: u32 = 100;

/// Runs the watchdog and a sweep step now, on the relay; a part that
/// failed answers 503 with the relay's own code and message.
pub async fn run(relay: &Relay) -> ApiResult {
    relay
        .maintenance()
        .await
        .map_err(|(code, message)| ApiError::Relayed { code, message })
}

/// Lists archive objects by table and UTC day, with their row counts.
pub async fn archive(env: &Env, params: &[(String, String)]) -> ApiResult {
    let listing = parse_archive_listing(params)?;
    let mut items = Vec::new();
    let (mut index, mut r2_cursor) = (listing.index, listing.r2_cursor);
    let cursor = loop {
        let want = PAGE - items.len() as u32;
        let page = archive_bucket::list(env, &listing.prefixes[index], r2_cursor.take(), want)
            .await
            .map_err(|e| {
                ApiError::Unavailable(format!(
                    "the R2 archive could not be listed: {}",
                    hookrelay_platform::db::error_message(&e)
                ))
            })?;
        items.extend(page.objects.iter().filter_map(item));
        let next = next_archive_cursor(index, page.cursor.as_deref(), listing.prefixes.len());
        if next.is_none() || items.len() >= PAGE as usize {
            break next;
        }
        index += usize::from(page.cursor.is_none());
        r2_cursor = page.cursor;
    };
    Ok(json!({"items": items, "cursor": cursor}))
}

/// One listed object, if its key is an archive key (not a `state/` object).
fn item(o: &archive_bucket::Listed) -> Option<Value> {
    let key = ArchiveKey::parse(&o.key)?;
    Some(json!({
        "key": o.key,
        "table": key.table.as_str(),
        "day": key.day,
        "rows": o.rows,
        "bytes": o.size,
        "uploaded": o.uploaded_ms,
    }))
}
