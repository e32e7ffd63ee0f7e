//! The one shape of every listing: `{"items": […], "next_cursor": …}`.

use hookrelay_core::admin::query::{encode_cursor, Cursor};
use serde::Serialize;
use serde_json::{json, Value};

/// Cuts a `limit + 1` row query into a page and the cursor of the next one
/// (the extra row only says that there is a next page).
pub fn list_page<T: Serialize>(
    mut rows: Vec<T>,
    limit: u32,
    cursor_of: impl Fn(&T) -> Cursor,
) -> Value {
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let next = rows
        .last()
        .filter(|_| more)
        .map(|r| encode_cursor(&cursor_of(r)));
    json!({"items": rows, "next_cursor": next})
}
