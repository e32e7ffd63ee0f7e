//! The batch's read: one D1 round trip for what every message of the batch
//! names (attempt histories, claim-checked bodies) and for the store
//! snapshot the plan decides from. A claim-checked body's dedupe key is
//! only known once the body is read, so a batch that has one makes a
//! second, small read for those keys.

use hookrelay_core::envelope::{AttemptRecord, Envelope, Prepared};
use hookrelay_core::triage_plan::StoreSnapshot;
use hookrelay_core::vec_map::VecMap;
use hookrelay_platform::db::Query;
use hookrelay_platform::db::{attempts, dead_letters, payloads};
use worker::D1Database;

/// What D1 said about a batch.
pub struct Evidence {
    /// Failed attempts by original queue message id.
    pub histories: Vec<(String, Vec<AttemptRecord>)>,
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
    let original_ids: Vec<&str> = prepared.iter().map(Prepared::original_message_id).collect();
    let body_refs: Vec<&str> = prepared.iter().filter_map(Prepared::body_ref).collect();
    let entry_ids: Vec<String> = prepared.iter().map(Prepared::entry_id).collect();
    let hashes: Vec<String> = prepared
        .iter()
        .filter_map(|p| p.inline_content_hash().map(str::to_string))
        .collect();
    let mut statements = vec![attempts::histories_statement(db, &original_ids)?];
    if !body_refs.is_empty() {
        statements.push(payloads::bodies_statement(db, &body_refs)?);
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
    Ok(Evidence {
        histories: attempts::histories_of(histories)?,
        bodies,
        snapshot: dead_letters::snapshot_of(rest)?,
        looked_up: hashes,
    })
}

impl Evidence {
    /// The failed attempts recorded under `original_id`, in no particular
    /// order (the envelope orders them).
    pub fn history(&self, original_id: &str) -> Vec<AttemptRecord> {
        self.histories
            .iter()
            .find(|(id, _)| id == original_id)
            .map(|(_, h)| h.clone())
            .unwrap_or_default()
    }
}

fn short_answer() -> worker::Error {
    worker::Error::RustError("the DLQ batch read answered too few results".into())
}

/// Adds to the snapshot the pending entries that share a dedupe key with a
/// claim-checked body (known only now), in one more round trip if any.
pub async fn add_claim_checked(
    db: &D1Database,
    evidence: &mut Evidence,
    envelopes: &[Envelope],
) -> worker::Result<()> {
    let missing: Vec<&str> = envelopes
        .iter()
        .filter(|e| e.input.body_ref.is_some())
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
