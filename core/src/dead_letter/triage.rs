//! What one `webhooks-dlq` batch writes, decided in one place from one read.
//!
//! The DLQ worker reads the store once per batch (which entry ids exist,
//! which pending entries share a dedupe key with a message, the pending
//! depth and its oldest entries), then [`plan`] replays the rules message by
//! message, in batch order, exactly as if each message had been stored on
//! its own: an identical pending entry is marked seen again, a DLQ message
//! already stored changes nothing, anything else is a new entry, and after
//! each message the oldest pending entries past capacity are evicted. The
//! batch is then one write, and [`settle`] reads each message's outcome
//! from the rows its statement changed.
//!
//! The statements keep their guards (the dedupe key is matched in SQL, the
//! insert refuses a second pending copy), so a concurrent writer cannot make
//! a duplicate: its effect shows as a message that changed nothing, which
//! is retried rather than acked.
//!
//! Entries dead-lettered in the same batch share one timestamp; among them
//! "oldest" is the lowest id, the same tie-break as SQL's eviction order
//! (`ORDER BY COALESCE(restored_at, created_at), id`: a restored entry
//! counts from its restore).

use crate::dead_letter::capacity::evictions_needed;
use crate::state::StoreOutcome;
use crate::UnixMillis;

/// One message of the batch, as the plan needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchEntry {
    /// Its entry id (`dlq_…`).
    pub id: String,
    /// Its dedupe key.
    pub content_hash: String,
}

/// A pending entry already in the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingEntry {
    /// Its entry id.
    pub id: String,
    /// Its dedupe key.
    pub content_hash: String,
    /// When it entered the pending store (unix ms): dead-lettered, or
    /// restored from the archive; eviction takes the oldest first.
    pub created_at_ms: UnixMillis,
}

/// What the store held when the batch was read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreSnapshot {
    /// Entry ids of this batch that are already stored, in any status.
    pub stored_ids: Vec<String>,
    /// Pending entries whose dedupe key is one of the batch's.
    pub same_hash: Vec<PendingEntry>,
    /// How many entries are pending.
    pub pending: u64,
    /// The oldest pending entries, at least as many as the batch can evict
    /// (fewer only when fewer are pending).
    pub oldest: Vec<PendingEntry>,
}

/// The statement one message needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryWrite {
    /// Insert the envelope, unless a pending entry has its dedupe key. The
    /// guard ignores `exempt`: entries with the same key that this batch
    /// evicts before this message, still present until the batch's
    /// evictions run at its end.
    Insert {
        /// Ids the insert's dedupe guard ignores.
        exempt: Vec<String>,
    },
    /// Mark the pending entries with its dedupe key seen again.
    MarkSeen,
    /// Nothing: this DLQ message was stored before.
    Nothing,
}

/// One message's statement and the outcome it should have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedEntry {
    /// The statement.
    pub write: EntryWrite,
    /// What storing it does if the store did not change since the read.
    pub expect: StoreOutcome,
}

/// The batch's write: one statement per message in batch order, then the
/// evictions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TriagePlan {
    /// Per message, in batch order.
    pub entries: Vec<PlannedEntry>,
    /// Entries to evict (tombstone, then delete), oldest first.
    pub evict: Vec<String>,
}

/// The store as the plan walks the batch. Plain vectors: a batch holds at
/// most 100 messages, so linear scans cost less than the code of a map.
struct Walk<'a> {
    known: Vec<&'a str>,
    /// Pending entries with one of the batch's dedupe keys: (id, key).
    keyed: Vec<(&'a str, &'a str)>,
    /// Evicted so far, with the dedupe key when it is one of the batch's.
    evicted: Vec<(&'a str, Option<&'a str>)>,
    /// Candidates for eviction: (dead-lettered at, id, listed by the snapshot).
    evictable: Vec<(UnixMillis, &'a str, bool)>,
    /// Pending entries the snapshot did not list: all older than this
    /// batch's, so none of the batch's may go before them.
    unlisted: u64,
    pending: u64,
}

impl<'a> Walk<'a> {
    fn new(snapshot: &'a StoreSnapshot) -> Walk<'a> {
        Walk {
            known: snapshot.stored_ids.iter().map(String::as_str).collect(),
            keyed: snapshot
                .same_hash
                .iter()
                .map(|e| (e.id.as_str(), e.content_hash.as_str()))
                .collect(),
            evicted: Vec::new(),
            evictable: snapshot
                .oldest
                .iter()
                .map(|e| (e.created_at_ms, e.id.as_str(), true))
                .collect(),
            unlisted: snapshot
                .pending
                .saturating_sub(snapshot.oldest.len() as u64),
            pending: snapshot.pending,
        }
    }

    fn store(&mut self, entry: &'a BatchEntry, now_ms: UnixMillis) -> PlannedEntry {
        let (id, hash) = (entry.id.as_str(), entry.content_hash.as_str());
        if self
            .keyed
            .iter()
            .any(|&(other, h)| h == hash && other != id)
        {
            return planned(EntryWrite::MarkSeen, StoreOutcome::Deduped);
        }
        if self.known.contains(&id) {
            return planned(EntryWrite::Nothing, StoreOutcome::Redelivered);
        }
        let exempt = self
            .evicted
            .iter()
            .filter(|(_, key)| *key == Some(hash))
            .map(|(gone, _)| gone.to_string())
            .collect();
        self.known.push(id);
        self.keyed.push((id, hash));
        self.evictable.push((now_ms, id, false));
        self.pending += 1;
        planned(EntryWrite::Insert { exempt }, StoreOutcome::Stored)
    }

    fn evict_past(&mut self, capacity: u64) {
        for _ in 0..evictions_needed(self.pending, capacity) {
            let oldest = (0..self.evictable.len()).min_by_key(|&i| {
                let (at, id, _) = self.evictable[i];
                (at, id)
            });
            let Some(i) = oldest else { return };
            let (_, id, listed) = self.evictable[i];
            if self.unlisted > 0 && !listed {
                return;
            }
            self.evictable.swap_remove(i);
            let key = self
                .keyed
                .iter()
                .position(|&(k, _)| k == id)
                .map(|p| self.keyed.swap_remove(p).1);
            self.evicted.push((id, key));
            self.pending -= 1;
        }
    }
}

fn planned(write: EntryWrite, expect: StoreOutcome) -> PlannedEntry {
    PlannedEntry { write, expect }
}

/// Plans a batch's write: each message in order, then capacity after each,
/// as storing them one by one would. `now_ms` is the batch's dead-lettered
/// time.
pub fn plan(
    batch: &[BatchEntry],
    snapshot: &StoreSnapshot,
    capacity: u64,
    now_ms: UnixMillis,
) -> TriagePlan {
    let mut walk = Walk::new(snapshot);
    let entries = batch
        .iter()
        .map(|entry| {
            let planned = walk.store(entry, now_ms);
            walk.evict_past(capacity);
            planned
        })
        .collect();
    TriagePlan {
        entries,
        evict: walk.evicted.iter().map(|(id, _)| id.to_string()).collect(),
    }
}

/// How one message ended after the batch write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// Stored, deduped or found stored: ack it.
    Done(StoreOutcome),
    /// Its statement changed nothing because the store changed since the
    /// read (another invocation wrote the same payload): retry it, and the
    /// next read decides again.
    Unsettled,
}

/// Reads each message's outcome from the rows its statement changed, in
/// plan order; `changes` is `None` when the batch write failed, and then
/// every message is retried.
pub fn settle(plan: &TriagePlan, changes: Option<&[usize]>) -> Vec<Settled> {
    plan.entries
        .iter()
        .enumerate()
        .map(|(i, entry)| match (changes, &entry.write) {
            (None, _) => Settled::Unsettled,
            (Some(_), EntryWrite::Nothing) => Settled::Done(entry.expect),
            (Some(c), _) if c.get(i).copied().unwrap_or(0) > 0 => Settled::Done(entry.expect),
            (Some(_), _) => Settled::Unsettled,
        })
        .collect()
}

/// Whether a batch whose write failed (after its read succeeded) is tried
/// again at once one message at a time. D1 rolls the whole batch back when
/// one statement fails, so a single message that D1 refuses (a row it
/// cannot take) would otherwise hold every message of its batch back on
/// each retry. A failed read is D1 being unwell, not one message, so it
/// retries the batch as it is.
pub fn split_after_failed_write(batch_len: usize) -> bool {
    batch_len > 1
}

/// How many more of the oldest pending entries to evict after the write:
/// the depth it left (the snapshot's, plus what was stored, minus what was
/// evicted) past capacity. Non-zero only when the snapshot listed fewer
/// old entries than the depth needed (a capacity lowered far below it);
/// a concurrent writer's excess is left to the next batch's fresh read.
pub fn evictions_after(
    snapshot: &StoreSnapshot,
    settled: &[Settled],
    evicted: usize,
    capacity: u64,
) -> u64 {
    let stored = settled
        .iter()
        .filter(|s| **s == Settled::Done(StoreOutcome::Stored))
        .count();
    let depth = (snapshot.pending + stored as u64).saturating_sub(evicted as u64);
    evictions_needed(depth, capacity)
}

#[cfg(test)]
mod tests;
