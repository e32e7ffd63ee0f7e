//! The archive copy a capacity eviction writes before it deletes anything
//! (DESIGN §4): one read of the evictees' whole rows and claim-checked
//! payloads, then one R2 put per object, under the deterministic entry keys
//! (a repeated eviction of the same entry overwrites its copy). Only a
//! batch that evicts pays for it; any failure leaves every entry in D1.

use hookrelay_core::dead_letter::envelope::Envelope;
use hookrelay_core::dead_letter::triage::{EntryWrite, TriagePlan};
use hookrelay_core::retention::entry_archive::{body_ref, entry_archives, EntryArchive};
use hookrelay_core::retention::ndjson::Row;
use hookrelay_platform::archive_bucket::{self, PutIf};
use hookrelay_platform::db::eviction::{self, Evictees};
use hookrelay_platform::db::{batch, dead_letters};
use worker::{D1Database, Env};

/// Archives what `plan` evicts, before the write that deletes it: the
/// stored entries as D1 holds them, and this batch's own new entries that
/// the same write inserts and evicts as they will be inserted. Nothing to
/// evict, nothing read or written.
pub async fn plan_evictions(
    env: &Env,
    db: &D1Database,
    envelopes: &[Envelope],
    plan: &TriagePlan,
    now: i64,
) -> worker::Result<Vec<EntryArchive>> {
    if plan.evict.is_empty() {
        return Ok(Vec::new());
    }
    let mut new_rows = Vec::new();
    for (e, entry) in envelopes.iter().zip(&plan.entries) {
        if matches!(entry.write, EntryWrite::Insert { .. }) && plan.evict.contains(&e.id) {
            new_rows.push(dead_letters::new_entry_row(e, now)?);
        }
    }
    archive(env, db, Evictees::Ids(&plan.evict), new_rows).await
}

/// Reads the whole rows of `evictees` (plus `new_rows`, not yet in D1) and
/// their payloads, and puts each entry's objects; answers what is archived.
pub async fn archive(
    env: &Env,
    db: &D1Database,
    evictees: Evictees<'_>,
    new_rows: Vec<Row>,
) -> worker::Result<Vec<EntryArchive>> {
    let refs: Vec<String> = new_rows.iter().filter_map(body_ref).collect();
    let refs: Vec<&str> = refs.iter().map(String::as_str).collect();
    let results = batch(
        db,
        eviction::read_statements(db, &evictees, &refs)?.to_vec(),
    )
    .await?;
    let [entries, payloads] = results.as_slice() else {
        return Err(worker::Error::RustError(format!(
            "the eviction read answered {} results, not 2",
            results.len()
        )));
    };
    let mut rows = eviction::rows_of(entries)?;
    // An entry already in D1 is archived as D1 holds it.
    let fresh: Vec<Row> = new_rows
        .into_iter()
        .filter(|n| !rows.iter().any(|r| r.get("id") == n.get("id")))
        .collect();
    rows.extend(fresh);
    let archives =
        entry_archives(&rows, &eviction::rows_of(payloads)?).map_err(worker::Error::RustError)?;
    for object in archives.iter().flat_map(|a| &a.objects) {
        archive_bucket::put(env, &object.key, &object.text, 1, PutIf::Always).await?;
    }
    Ok(archives)
}
