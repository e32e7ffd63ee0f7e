//! Restore of one evicted or swept entry from the R2 archive (DESIGN §4):
//! the rules are `core::retention::restore`; this module reads the
//! tombstone and the archived object, writes what the rules decide with
//! its audit record in one batch, and counts and logs it like the other
//! entry actions (`apply_entry_action`).

use hookrelay_core::metrics::{Component, Metric, MetricName};
use hookrelay_core::retention::archive_key::ArchiveKey;
use hookrelay_core::retention::entry_archive::{body_ref, DEAD_LETTER_COLUMNS, PAYLOAD_COLUMNS};
use hookrelay_core::retention::ndjson::{decode_rows, Row};
use hookrelay_core::retention::restore::{
    check_insert, check_write, dedupe, plan_restore, restored_row, write_capacity, AfterWrite,
    InsertRefused, RestorePlan, RestoreRefusal, RestoreWrite,
};
use hookrelay_core::state::{ArchiveTable, AuditAction, EntryStatus, ReplayOutcome};
use hookrelay_platform::archive_bucket;
use hookrelay_platform::db::replay_audit::{self, AuditRecord};
use hookrelay_platform::db::tombstones::{self, TombstoneRow};
use hookrelay_platform::db::{archived_rows, batch, changes, dead_letters, error_message};
use hookrelay_platform::{log, metrics};
use serde::{Deserialize, Serialize};
use worker::{D1Database, Env};

use crate::entries::apply_action::ActionContext;

/// What a restore did: `{"id","status","action","deduped_into"}`.
#[derive(Debug, Clone, Serialize)]
pub struct RestoreResult {
    /// The entry.
    pub id: String,
    /// Its status now (for a restore that joined a pending twin, the
    /// twin's: `pending`).
    pub status: EntryStatus,
    /// Always `restore`.
    pub action: AuditAction,
    /// The pending entry it joined instead of being stored twice.
    pub deduped_into: Option<String>,
}

/// Why a restore changed nothing.
#[derive(Debug)]
pub enum RestoreError {
    /// No tombstone and no entry with this id (404).
    NotFound(String),
    /// The rules refuse it (409 with the refusal's code).
    Refused(RestoreRefusal),
    /// The entry is in D1, or another writer changed it between the
    /// restore's read and its write (409).
    Conflict(String),
    /// The archived object is missing or unreadable; names the key (502).
    Archive(String),
    /// D1 could not read or write it.
    Storage(worker::Error),
}

impl From<worker::Error> for RestoreError {
    fn from(e: worker::Error) -> Self {
        RestoreError::Storage(e)
    }
}

/// Restores entry `id` against `capacity` pending entries.
pub async fn restore(
    env: &Env,
    db: &D1Database,
    id: &str,
    capacity: u64,
    ctx: &ActionContext<'_>,
) -> Result<RestoreResult, RestoreError> {
    let (tomb, pending, twin) = read(db, id).await?;
    let plan = plan_restore(&tomb.tombstone(), pending, capacity).map_err(RestoreError::Refused)?;
    let row = archived_row(env, &plan, id, ctx.now_ms).await?;
    let audit = |outcome| AuditRecord {
        entry_id: id,
        event_id: tomb.event_id.as_deref(),
        actor: ctx.actor,
        reason: ctx.reason,
        action: AuditAction::Restore,
        outcome,
        error: None,
        run_id: None,
        job_id: None,
        at_ms: ctx.now_ms,
    };
    let result = match dedupe(plan.status, twin.as_deref()) {
        RestoreWrite::Insert => {
            let audit = audit(ReplayOutcome::Succeeded);
            insert_restored(env, db, &plan, &row, &audit, capacity).await?;
            RestoreResult {
                id: id.to_string(),
                status: plan.status,
                action: AuditAction::Restore,
                deduped_into: None,
            }
        }
        RestoreWrite::JoinExisting { existing_id } => {
            join_existing(db, &existing_id, &audit(ReplayOutcome::Deduped)).await?;
            RestoreResult {
                id: id.to_string(),
                status: EntryStatus::Pending,
                action: AuditAction::Restore,
                deduped_into: Some(existing_id),
            }
        }
    };
    report(&tomb, &plan, &result, ctx);
    Ok(result)
}

/// Marks the pending entry `twin` seen again and audits the restore as
/// deduped into it, in one transaction, both only while `twin` is still
/// pending; if it stopped being pending since the read, neither writes.
async fn join_existing(
    db: &D1Database,
    twin: &str,
    audit: &AuditRecord<'_>,
) -> Result<(), RestoreError> {
    let results = batch(
        db,
        vec![
            replay_audit::insert_if_status_of(db, audit, twin, EntryStatus::Pending)?,
            dead_letters::mark_seen_again(db, twin, audit.at_ms)?,
        ],
    )
    .await?;
    let write = RestoreWrite::JoinExisting {
        existing_id: twin.to_string(),
    };
    let changed = results.get(1).map_or(0, changes);
    check_write(audit.entry_id, &write, changed).map_err(|r| RestoreError::Conflict(r.message()))
}

/// Audits, puts the archived payload (unless D1 still has it) and the row
/// back, and removes the tombstone, in one transaction. Each statement is
/// guarded by the state the read saw (the tombstone is there, no entry has
/// the id) and, for a pending restore, by the capacity counted as it runs,
/// so if another restore or a new dead letter with the id came first, or
/// concurrent restores filled the store since the read, none of them
/// writes and the restore answers 409 (`CONFLICT`, or `AT_CAPACITY`
/// naming the capacity, told apart by the batch's closing read).
async fn insert_restored(
    env: &Env,
    db: &D1Database,
    plan: &RestorePlan,
    row: &Row,
    audit: &AuditRecord<'_>,
    capacity: u64,
) -> Result<(), RestoreError> {
    let id = audit.entry_id;
    let payload = archived_payload(env, plan, row).await?;
    let bound = write_capacity(plan, capacity);
    let mut statements = vec![replay_audit::insert_if_evicted(db, audit, bound)?];
    if let Some(p) = &payload {
        let payloads = ArchiveTable::Payloads;
        statements.push(archived_rows::insert(
            db,
            payloads,
            &PAYLOAD_COLUMNS,
            Some("event_id"),
            p,
            id,
            bound,
        )?);
    }
    let entries = ArchiveTable::DeadLetters;
    statements.push(archived_rows::insert(
        db,
        entries,
        &DEAD_LETTER_COLUMNS,
        None,
        row,
        id,
        bound,
    )?);
    let inserted = statements.len() - 1;
    // Right after the entry's insert: it removes the tombstone only if
    // that insert wrote the row.
    statements.push(tombstones::delete_after_restore(db, id)?);
    statements.push(tombstones::after_restore(db, id)?);
    let results = batch(db, statements).await?;
    let changed = results.get(inserted).map_or(0, changes);
    let after = results
        .last()
        .map(after_write)
        .transpose()?
        .ok_or_else(|| {
            RestoreError::Storage(worker::Error::RustError(
                "the restore's write answered too few results".into(),
            ))
        })?;
    check_insert(id, bound, changed, after).map_err(|e| match e {
        InsertRefused::Refused(r) => RestoreError::Refused(r),
        InsertRefused::Raced(r) => RestoreError::Conflict(r.message()),
    })
}

/// [`tombstones::after_restore`]'s one row.
fn after_write(rows: &hookrelay_platform::db::Rows) -> Result<AfterWrite, RestoreError> {
    #[derive(Deserialize)]
    struct After {
        pending: f64,
        still_evicted: f64,
    }
    let after = rows.first::<After>()?.ok_or_else(|| {
        RestoreError::Storage(worker::Error::RustError(
            "the restore's closing read answered no row".into(),
        ))
    })?;
    Ok(AfterWrite {
        pending: after.pending.max(0.0) as u64,
        still_evicted: after.still_evicted != 0.0,
    })
}

/// One round trip: the tombstone, the pending depth, and a pending entry
/// with the tombstone's content hash (the dedupe check).
async fn read(
    db: &D1Database,
    id: &str,
) -> Result<(TombstoneRow, u64, Option<String>), RestoreError> {
    #[derive(Deserialize)]
    struct N {
        n: i64,
    }
    #[derive(Deserialize)]
    struct Id {
        id: String,
    }
    let results = batch(
        db,
        vec![
            tombstones::get_statement(db, id)?,
            dead_letters::count_pending_statement(db)?,
            dead_letters::pending_twin_of_tombstone(db, id)?,
            dead_letters::exists_statement(db, id)?,
        ],
    )
    .await?;
    let [tomb, depth, twin, live] = results.as_slice() else {
        return Err(RestoreError::Storage(worker::Error::RustError(
            "the restore read answered too few results".into(),
        )));
    };
    let Some(tomb) = tomb.first::<TombstoneRow>()? else {
        return Err(match dead_letters::get(db, id).await? {
            Some(e) => RestoreError::Conflict(format!(
                "the entry '{id}' is in D1 ({}), not evicted; there is nothing to restore",
                e.summary.status
            )),
            None => RestoreError::NotFound(format!("no dead-letter entry or tombstone '{id}'")),
        });
    };
    if live.first::<Id>()?.is_some() {
        return Err(RestoreError::Conflict(format!("an entry '{id}' is in D1 beside its tombstone (the same message was dead-lettered again); act on that entry instead")));
    }
    let pending = depth.first::<N>()?.map_or(0, |r| r.n.max(0) as u64);
    Ok((tomb, pending, twin.first::<Id>()?.map(|r| r.id)))
}

/// The entry's row from the object the plan names, as it comes back.
async fn archived_row(
    env: &Env,
    plan: &RestorePlan,
    id: &str,
    now: i64,
) -> Result<Row, RestoreError> {
    let object = archive_bucket::get(env, &plan.key)
        .await
        .map_err(|e| RestoreError::Archive(format!("the archive object {} could not be read: {}; try again", plan.key, error_message(&e))))?
        .ok_or_else(|| RestoreError::Archive(format!("the archive object {} is missing from the ARCHIVE bucket; the entry cannot be restored", plan.key)))?;
    restored_row(plan, id, &object.text, now).map_err(|e| {
        RestoreError::Archive(format!(
            "the archive object {} cannot be restored: {e}",
            plan.key
        ))
    })
}

/// The claim-checked payload archived beside the entry, if its envelope
/// names one and the object exists (the payload may still be in D1).
async fn archived_payload(
    env: &Env,
    plan: &RestorePlan,
    row: &Row,
) -> Result<Option<Row>, RestoreError> {
    if body_ref(row).is_none() {
        return Ok(None);
    }
    let key = ArchiveKey::parse(&plan.key)
        .map(|k| k.sibling(ArchiveTable::Payloads).to_string())
        .ok_or_else(|| {
            RestoreError::Archive(format!(
                "the tombstone's archive key {} is not an archive key",
                plan.key
            ))
        })?;
    let unreadable =
        |e: String| RestoreError::Archive(format!("the archive object {key} cannot be read: {e}"));
    match archive_bucket::get(env, &key)
        .await
        .map_err(|e| unreadable(error_message(&e)))?
    {
        None => Ok(None),
        Some(o) => Ok(decode_rows(&o.text).map_err(unreadable)?.into_iter().next()),
    }
}

/// The restore's counter and its log line (no payload, no reason text).
fn report(tomb: &TombstoneRow, plan: &RestorePlan, r: &RestoreResult, ctx: &ActionContext<'_>) {
    let source = tomb.source.as_deref().unwrap_or("");
    metrics::count(
        Metric::new(MetricName::Restored, Component::Admin).source(source),
        1,
    );
    log::info(
        Component::Admin,
        "entry_decision",
        log::fields! {"id": r.id, "event_id": tomb.event_id, "action": r.action, "from": "evicted", "cause": tomb.cause.as_str(), "to": r.status, "deduped_into": r.deduped_into, "archive_key": plan.key, "actor": ctx.actor},
    );
}
