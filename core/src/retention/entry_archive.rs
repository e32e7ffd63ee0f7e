//! What a capacity eviction writes to the archive before it deletes an
//! entry (DESIGN §4): the whole `dead_letters` row under
//! [`ArchiveKey::entry`], and, when its envelope names a claim-checked body
//! (`input.body_ref`), that `payloads` row beside it under the sibling key.
//! The same layout the retention sweep writes for a swept entry, so one
//! restore reads both.
//!
//! Also the columns a restore may write back: an archived row is data from
//! R2, so its column names are checked against the table's before they
//! reach SQL.

use super::archive_key::ArchiveKey;
use super::ndjson::{encode_rows, Row};
use crate::state::ArchiveTable;
use serde_json::Value;

/// One object to put.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveObject {
    /// Its key.
    pub key: String,
    /// Its NDJSON text (one row).
    pub text: String,
}

/// An entry's archived copy: what to put, and the key its tombstone names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryArchive {
    /// The entry's id.
    pub id: String,
    /// The key of its envelope (the tombstone's `archive_key`).
    pub key: String,
    /// The envelope's object, then its payload's if it has one.
    pub objects: Vec<ArchiveObject>,
}

/// The archived copies of `entries` (whole `dead_letters` rows), each with
/// the row of `payloads` its envelope's `input.body_ref` names, if read. A
/// row without a text `id` or an integer `created_at` is an error naming
/// what is missing (it would have no key), never skipped.
pub fn entry_archives(entries: &[Row], payloads: &[Row]) -> Result<Vec<EntryArchive>, String> {
    entries
        .iter()
        .map(|row| {
            let id = row
                .get("id")
                .and_then(Value::as_str)
                .ok_or("an evicted dead_letters row has no text id")?;
            let created_at = row
                .get("created_at")
                .and_then(Value::as_i64)
                .ok_or_else(|| format!("the evicted entry {id} has no integer created_at"))?;
            let key = ArchiveKey::entry(id, created_at);
            let mut objects = vec![ArchiveObject {
                key: key.to_string(),
                text: encode_rows(std::slice::from_ref(row)),
            }];
            if let Some(payload) = body_ref(row).and_then(|r| payload_of(payloads, &r)) {
                objects.push(ArchiveObject {
                    key: key.sibling(ArchiveTable::Payloads).to_string(),
                    text: encode_rows(std::slice::from_ref(payload)),
                });
            }
            Ok(EntryArchive {
                id: id.to_string(),
                key: key.to_string(),
                objects,
            })
        })
        .collect()
}

/// [`body_ref`] in SQL, over a `dead_letters` row: the reads before an
/// eviction and before the sweep of an entry find its payload by it.
pub const BODY_REF_SQL: &str = "json_extract(envelope, '$.input.body_ref')";

/// The `payloads.event_id` an entry row's envelope refers to, if any.
pub fn body_ref(row: &Row) -> Option<String> {
    let envelope: Value = serde_json::from_str(row.get("envelope")?.as_str()?).ok()?;
    envelope
        .pointer("/input/body_ref")?
        .as_str()
        .map(str::to_string)
}

fn payload_of<'a>(payloads: &'a [Row], event_id: &str) -> Option<&'a Row> {
    payloads
        .iter()
        .find(|p| p.get("event_id").and_then(Value::as_str) == Some(event_id))
}

/// Every column of `dead_letters` (migrations 0002, 0010, 0013 and 0017).
pub const DEAD_LETTER_COLUMNS: [&str; 23] = [
    "id",
    "kind",
    "status",
    "event_id",
    "idempotency_key",
    "source",
    "queue_message_id",
    "error_code",
    "error_class",
    "error_signature",
    "attempts",
    "content_hash",
    "created_at",
    "last_seen_at",
    "seen_count",
    "replay_attempts",
    "replayed_at",
    "envelope",
    "resolved_at",
    "event_archive_key",
    "restored_at",
    "entry_kind",
    "destination",
];

/// Every column of `payloads` (migration 0001).
pub const PAYLOAD_COLUMNS: [&str; 5] = ["event_id", "source", "body", "body_bytes", "created_at"];

/// The columns of `row` to insert into a table of `known` columns, in the
/// row's order; a name the table does not have is an error naming it (an
/// object edited by hand, or from a newer version), never written.
pub fn insert_columns<'a>(row: &'a Row, known: &[&str]) -> Result<Vec<&'a str>, String> {
    row.keys()
        .map(|k| match known.contains(&k.as_str()) {
            true => Ok(k.as_str()),
            false => Err(format!(
                "the archived row has a column '{}' the table does not have",
                k.chars().take(64).collect::<String>()
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests;
