//! Capacity of the dead-letter store: at capacity the oldest pending entries
//! are evicted (each leaves a tombstone and is counted as `drop_overflow`).
//! Replayed and poisoned entries never count against capacity and are never
//! evicted: they are history.

/// Default maximum number of pending entries.
pub const DEFAULT_CAPACITY: u64 = 10_000;

/// How many of the oldest pending entries to evict when `pending` entries
/// are stored against a `capacity`.
pub fn evictions_needed(pending: u64, capacity: u64) -> u64 {
    pending.saturating_sub(capacity)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eviction_starts_only_past_capacity() {
        let table = [
            (0, 3, 0),
            (3, 3, 0),
            (4, 3, 1),
            (10, 3, 7),
            (10_001, DEFAULT_CAPACITY, 1),
        ];
        for (pending, capacity, evict) in table {
            assert_eq!(
                evictions_needed(pending, capacity),
                evict,
                "{pending}/{capacity}"
            );
        }
    }
}
