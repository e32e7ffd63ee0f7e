//! The batch's read: one D1 round trip for what every message of the batch
//! names (attempt histories, claim-checked bodies, a delivery message's
//! event row) and for the store snapshot the plan decides from. A
//! claim-checked body's or a delivery's dedupe key is only known once the
//! body is read, so a batch that has one makes a second, small read for
//! those keys.

use hookrelay_core::dead_letter::envelope::{AttemptRecord, Envelope, EventRow, Prepared};
use hookrelay_core::dead_letter::triage::StoreSnapshot;
use hookrelay_core::support::vec_map::VecMap;
use hookrelay_platform::db::events::delivery_evidence;
use hookrelay_platform::db::Query;
use hookrelay_platform::db::{attempts, dead_letters, payloads};
use worker::D1Database;

/// What D1 said about a batch.
pub struct Evidence {
    /// Failed ingest attempts by original queue message id, and a
    /// delivery's by `attempts::delivery_history_key`.
    pub histories: Vec<(String, Vec<AttemptRecord>)>,
    /// The rows of the events the delivery messages name, by event id.
    pub event_rows: VecMap<String, EventRow>,
    /// Claim-checked bodies by event id.
    pub bodies: VecMap<String, String>,
    /// The store, for the plan.
    pub snapshot: StoreSnapshot,
    /// The dedupe keys the snapshot already looked up.
    looked_up: Vec<String>,
}

/// Reads the evidence of `prepared` (the batch, in order) in one round trip.
pub async fn read(
    db: &D1Database,
    prepared: &[Prepared],
    capacity: u64,
) -> worker::Result<Evidence> {
    let original_ids: Vec<&str> = prepared
        .iter()
        .filter(|p| p.delivery_key().is_none())
        .map(Prepared::original_message_id)
        .collect();
    let delivery_keys: Vec<(&str, &str)> =
        prepared.iter().filter_map(Prepared::delivery_key).collect();
    let delivery_events: Vec<&str> = delivery_keys.iter().map(|(e, _)| *e).collect();
    let body_refs: Vec<&str> = prepared.iter().filter_map(Prepared::body_ref).collect();
    let entry_ids: Vec<String> = prepared.iter().map(Prepared::entry_id).collect();
    let hashes: Vec<String> = prepared
        .iter()
        .filter_map(|p| p.inline_content_hash().map(str::to_string))
        .collect();
    let mut statements = vec![attempts::histories_statement(
        db,
        &original_ids,
        &delivery_keys,
    )?];
    if !body_refs.is_empty() {
        statements.push(payloads::bodies_statement(db, &body_refs)?);
    }
    if !delivery_keys.is_empty() {
        statements.push(delivery_evidence::statement(db, &delivery_events)?);
    }
    statements.extend(dead_letters::snapshot_statements(
        db,
        &entry_ids,
        &hashes,
        prepared.len(),
        capacity,
    )?);
    let results = hookrelay_platform::db::batch(db, statements).await?;
    let (histories, rest) = results.split_first().ok_or_else(short_answer)?;
    let (bodies, rest) = match body_refs.is_empty() {
        true => (VecMap::new(), rest),
        false => {
            let (bodies, rest) = rest.split_first().ok_or_else(short_answer)?;
            (payloads::bodies_of(bodies)?, rest)
        }
    };
    let (event_rows, rest) = match delivery_keys.is_empty() {
        true => (VecMap::new(), rest),
        false => {
            let (rows, rest) = rest.split_first().ok_or_else(short_answer)?;
            (delivery_evidence::rows_of(rows)?, rest)
        }
    };
    Ok(Evidence {
        histories: attempts::histories_of(histories)?,
        event_rows,
        bodies,
        snapshot: dead_letters::snapshot_of(rest)?,
        looked_up: hashes,
    })
}

impl Evidence {
    /// The failed attempts of `p`, in no particular order (the envelope
    /// orders them): a delivery's are its destination's for its event, an
    /// ingest's those recorded under its original queue message id.
    pub fn history(&self, p: &Prepared) -> Vec<AttemptRecord> {
        let key = match p.delivery_key() {
            Some((event_id, destination)) => attempts::delivery_history_key(event_id, destination),
            None => p.original_message_id().to_string(),
        };
        self.histories
            .iter()
            .find(|(id, _)| *id == key)
            .map(|(_, h)| h.clone())
            .unwrap_or_default()
    }

    /// The row of a delivery message's event, if D1 still has it.
    pub fn event_row(&self, p: &Prepared) -> Option<EventRow> {
        let (event_id, _) = p.delivery_key()?;
        self.event_rows.get(event_id).cloned()
    }
}

fn short_answer() -> worker::Error {
    worker::Error::RustError("the DLQ batch read answered too few results".into())
}

/// Adds to the snapshot the pending entries that share a dedupe key known
/// only now (a claim-checked body's, a delivery's), in one more round trip
/// if any.
pub async fn add_claim_checked(
    db: &D1Database,
    evidence: &mut Evidence,
    envelopes: &[Envelope],
) -> worker::Result<()> {
    let missing: Vec<&str> = envelopes
        .iter()
        .map(|e| e.input.content_hash.as_str())
        .filter(|h| !evidence.looked_up.iter().any(|seen| seen == h))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let result = dead_letters::same_hash_statement(db, &missing)?
        .query()
        .await?;
    evidence
        .snapshot
        .same_hash
        .extend(dead_letters::same_hash_of(&result)?);
    Ok(())
}
