//! The events a `webhooks-dlq` batch's delivery messages name: a delivery
//! message carries no body, so its dead letter reads the event's body and
//! redacted headers from the row, and a claim-checked body from `payloads`
//! in the same statement (one read for the batch, whatever its bodies).

use super::super::text;
use crate::db::Rows;
use hookrelay_core::dead_letter::envelope::EventRow;
use hookrelay_core::support::vec_map::VecMap;
use std::collections::BTreeMap;
use worker::{D1Database, D1PreparedStatement, Result};

/// The rows of `event_ids`, each with its claim-checked body; read it with
/// [`rows_of`].
pub fn statement(db: &D1Database, event_ids: &[&str]) -> Result<D1PreparedStatement> {
    let ids = serde_json::to_string(event_ids)?;
    db.prepare(
        "SELECT e.event_id, e.delivery_id, e.received_at, e.headers, e.body, e.body_ref, e.body_bytes, \
           (SELECT p.body FROM payloads p WHERE p.event_id = e.body_ref) AS stored_body \
         FROM events e WHERE e.event_id IN (SELECT value FROM json_each(?1))",
    )
    .bind(&[text(&ids)])
}

/// The rows by event id. Headers that do not read as a JSON object of
/// strings read as none: the row is evidence, and one bad column must not
/// lose the rest.
pub fn rows_of(result: &Rows) -> Result<VecMap<String, EventRow>> {
    Ok(result
        .map(|r| {
            let headers: BTreeMap<String, String> =
                serde_json::from_str(&r.text("headers")?).unwrap_or_default();
            Ok((
                r.text("event_id")?,
                EventRow {
                    delivery_id: r.opt_text("delivery_id")?,
                    received_at_ms: r.int("received_at")?,
                    headers,
                    body: r.opt_text("body")?,
                    body_ref: r.opt_text("body_ref")?,
                    body_bytes: r.int("body_bytes")?.max(0) as u64,
                    stored_body: r.opt_text("stored_body")?,
                },
            ))
        })?
        .into_iter()
        .collect())
}
