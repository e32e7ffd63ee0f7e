//! Bringing a dead letter back from the archive (DESIGN §4, `restore`), and
//! which archived copies a `discard` erases.
//!
//! - An evicted entry comes back `pending`, through the dedupe check: if a
//!   pending entry with the same content hash exists, the restore joins it
//!   (marks it seen again) instead of storing a second copy.
//! - A swept entry comes back with the status it had when it was swept.
//! - A discarded entry has nothing to restore (its payload was erased): `409`.
//! - A restore that would add a pending entry at capacity is refused with
//!   `409` naming the capacity; nothing is evicted for it. The read's
//!   count refuses early, and the write counts again in its own guard
//!   ([`write_capacity`], [`check_insert`]), so restores that run together
//!   cannot each pass the read and overfill the store.
//! - A restored entry takes a fresh place in the eviction order
//!   (`restored_at`, the restore's time), so it is not the next one
//!   evicted; `created_at` keeps when it was dead-lettered.
//!
//! The glue reads the tombstone, asks [`plan_restore`], reads the object
//! under the plan's key, takes the row from [`restored_row`], and writes
//! what [`dedupe`] decides, with the audit record, in one batch guarded by
//! what it read; [`check_write`] turns a write another writer overtook
//! into a `409` ([`RestoreRace`]).

use super::archive_key::ArchiveKey;
use super::ndjson::{decode_rows, Row};
use crate::state::{ArchiveTable, AuditAction, EntryStatus, TombstoneCause};
use crate::UnixMillis;
use serde_json::Value;

/// A tombstone, as the glue read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tombstone {
    /// The entry's id.
    pub id: String,
    /// Evicted or swept.
    pub cause: TombstoneCause,
    /// For a swept entry, the status it had.
    pub prior_status: Option<EntryStatus>,
    /// Where its envelope is archived; `None` for tombstones written before
    /// the archive existed.
    pub archive_key: Option<String>,
}

/// Why a restore is refused; each is a `409`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RestoreRefusal {
    /// The entry was discarded before it was swept: its payload is gone.
    Discarded,
    /// Restoring would add a pending entry to a full store.
    AtCapacity {
        /// Pending entries now.
        pending: u64,
        /// `DLQ_CAPACITY`.
        capacity: u64,
    },
    /// The tombstone names no archived copy (written before the archive).
    NotArchived,
}

impl RestoreRefusal {
    /// The stable error code.
    pub fn code(&self) -> &'static str {
        match self {
            RestoreRefusal::Discarded => "DISCARDED",
            RestoreRefusal::AtCapacity { .. } => "AT_CAPACITY",
            RestoreRefusal::NotArchived => "NOT_ARCHIVED",
        }
    }

    /// What happened and what to do next.
    pub fn message(&self) -> String {
        match self {
            RestoreRefusal::Discarded => "the entry was discarded, so its payload was erased and there is nothing to restore".into(),
            RestoreRefusal::AtCapacity { pending, capacity } => format!(
                "the dead-letter store is at capacity ({pending} pending of DLQ_CAPACITY {capacity}); restoring would evict another entry, so nothing was restored. Replay, archive or discard pending entries, or raise DLQ_CAPACITY, then retry"
            ),
            RestoreRefusal::NotArchived => "this tombstone predates the archive and names no archived copy; the entry cannot be restored".into(),
        }
    }
}

/// What a restore will do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestorePlan {
    /// The status the entry comes back with.
    pub status: EntryStatus,
    /// The object that holds it.
    pub key: String,
}

/// Decides a restore from the tombstone and the store's pending count:
/// what the tombstone allows ([`restorable`]), then the capacity.
pub fn plan_restore(
    t: &Tombstone,
    pending: u64,
    capacity: u64,
) -> Result<RestorePlan, RestoreRefusal> {
    let plan = restorable(t)?;
    if plan.status == EntryStatus::Pending && pending >= capacity {
        return Err(RestoreRefusal::AtCapacity { pending, capacity });
    }
    Ok(plan)
}

/// What the tombstone itself allows, before the capacity is counted.
pub fn restorable(t: &Tombstone) -> Result<RestorePlan, RestoreRefusal> {
    let status = match (t.cause, t.prior_status) {
        (TombstoneCause::Evicted, _) => EntryStatus::Pending,
        (TombstoneCause::Swept, Some(EntryStatus::Discarded)) => {
            return Err(RestoreRefusal::Discarded)
        }
        (TombstoneCause::Swept, Some(prior)) => prior,
        // A swept tombstone always records its status; without it the
        // row's own status (read by `restored_row`) would decide, and a
        // discarded one is refused there.
        (TombstoneCause::Swept, None) => EntryStatus::Archived,
    };
    let key = t.archive_key.clone().ok_or(RestoreRefusal::NotArchived)?;
    Ok(RestorePlan { status, key })
}

/// What a tombstone allows now (an evicted entry's `"actions"`): Restore
/// when [`restorable`], the restore route's own guard, lets it through.
/// The capacity is not the entry's own state: at capacity the route says
/// so with its `409`.
pub fn tombstone_actions(t: &Tombstone) -> Vec<AuditAction> {
    restorable(t)
        .ok()
        .map(|_| AuditAction::Restore)
        .into_iter()
        .collect()
}

/// The row to put back at `now`: the archived line whose `id` is `id`, with
/// its status set to the plan's, `resolved_at` set to `now` for a resolved
/// status (cleared for `pending`), so `DLQ_RETENTION` counts from the
/// restore and the next sweep does not take it straight back, and
/// `restored_at` set to `now`, its place in the eviction order.
pub fn restored_row(
    plan: &RestorePlan,
    id: &str,
    object_text: &str,
    now: UnixMillis,
) -> Result<Row, String> {
    let mut rows = decode_rows(object_text)?;
    let at = rows
        .iter()
        .position(|r| r.get("id").and_then(Value::as_str) == Some(id))
        .ok_or_else(|| format!("the archive object {} holds no entry {id}", plan.key))?;
    let mut row = rows.swap_remove(at);
    if row.get("status").and_then(Value::as_str) == Some(EntryStatus::Discarded.as_str()) {
        return Err(format!(
            "the archived entry {id} was discarded; its payload is erased"
        ));
    }
    row.insert("status".into(), Value::from(plan.status.as_str()));
    let resolved_at = (plan.status != EntryStatus::Pending).then_some(now);
    row.insert("resolved_at".into(), Value::from(resolved_at));
    row.insert("restored_at".into(), Value::from(now));
    Ok(row)
}

/// The pending count a restore's write must find its store below, checked
/// inside the write's guard: the capacity for a restore that adds a
/// pending entry, none for one that comes back resolved.
pub fn write_capacity(plan: &RestorePlan, capacity: u64) -> Option<u64> {
    (plan.status == EntryStatus::Pending).then_some(capacity)
}

/// What a restore's batch reads after its write, in the same transaction:
/// why a write that changed nothing did not write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AfterWrite {
    /// Pending entries.
    pub pending: u64,
    /// The tombstone is there and no entry has its id.
    pub still_evicted: bool,
}

/// Why a restore's guarded insert wrote nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InsertRefused {
    /// The store was full when the write ran (`AtCapacity`).
    Refused(RestoreRefusal),
    /// Another writer took the entry first.
    Raced(RestoreRace),
}

/// Whether a restore's insert happened (`changed` rows); when it did not,
/// whether the write's own capacity guard refused it (the entry is still
/// evicted and the store is full: `409 AT_CAPACITY`) or another writer came
/// first (a race).
pub fn check_insert(
    id: &str,
    write_capacity: Option<u64>,
    changed: usize,
    after: AfterWrite,
) -> Result<(), InsertRefused> {
    if changed > 0 {
        return Ok(());
    }
    match write_capacity {
        Some(capacity) if after.still_evicted && after.pending >= capacity => {
            Err(InsertRefused::Refused(RestoreRefusal::AtCapacity {
                pending: after.pending,
                capacity,
            }))
        }
        _ => Err(InsertRefused::Raced(RestoreRace::EntryChanged {
            id: id.into(),
        })),
    }
}

/// How a restored entry is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RestoreWrite {
    /// Insert the row and delete the tombstone.
    Insert,
    /// A pending entry with the same content hash exists: mark it seen
    /// again, insert nothing, keep the tombstone.
    JoinExisting {
        /// The pending entry it joins.
        existing_id: String,
    },
}

/// The dedupe check for a restore to `status`: only a pending restore can
/// duplicate a pending entry. `pending_with_same_hash` is what the glue
/// found for the row's `content_hash`.
pub fn dedupe(status: EntryStatus, pending_with_same_hash: Option<&str>) -> RestoreWrite {
    match pending_with_same_hash {
        Some(existing) if status == EntryStatus::Pending => RestoreWrite::JoinExisting {
            existing_id: existing.to_string(),
        },
        _ => RestoreWrite::Insert,
    }
}

/// Why a restore's write changed nothing although its read allowed it:
/// another writer changed the entry in between. Each is a `409`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RestoreRace {
    /// The tombstone is gone or an entry with its id appeared (another
    /// restore won, or the same message was dead-lettered again).
    EntryChanged {
        /// The entry.
        id: String,
    },
    /// The pending entry the restore would join stopped being pending.
    TwinChanged {
        /// The entry.
        id: String,
        /// The pending entry it would have joined.
        twin: String,
    },
}

impl RestoreRace {
    /// What happened and what to do next.
    pub fn message(&self) -> String {
        match self {
            RestoreRace::EntryChanged { id } => format!(
                "the entry '{id}' changed while it was being restored (another restore or a new dead letter with its id came first); nothing was written. Read it again with GET /api/v1/admin/webhook-dlq/{id}, and restore it only if it still answers as evicted"
            ),
            RestoreRace::TwinChanged { id, twin } => format!(
                "the pending entry '{twin}' that restoring '{id}' would join stopped being pending meanwhile; nothing was written. Read '{id}' again with GET /api/v1/admin/webhook-dlq/{id} and retry the restore"
            ),
        }
    }
}

/// Whether the write `dedupe` chose happened. Every statement of the
/// write is guarded by the state the read saw, so `changed` (the rows the
/// deciding statement changed: the entry's insert, or the twin's
/// seen-again update) is 0 exactly when another writer came first.
pub fn check_write(id: &str, write: &RestoreWrite, changed: usize) -> Result<(), RestoreRace> {
    match (write, changed) {
        (_, 1..) => Ok(()),
        (RestoreWrite::Insert, 0) => Err(RestoreRace::EntryChanged { id: id.into() }),
        (RestoreWrite::JoinExisting { existing_id }, 0) => Err(RestoreRace::TwinChanged {
            id: id.into(),
            twin: existing_id.clone(),
        }),
    }
}

/// Every archived copy of entry `id` (dead-lettered at `created_at`) that
/// a discard erases: its envelope and its claim-checked payload. Deleting
/// an absent object is harmless, so the glue deletes both.
pub fn archived_copies(id: &str, created_at: UnixMillis) -> [ArchiveKey; 2] {
    let entry = ArchiveKey::entry(id, created_at);
    let payload = entry.sibling(ArchiveTable::Payloads);
    [entry, payload]
}

#[cfg(test)]
mod tests;
