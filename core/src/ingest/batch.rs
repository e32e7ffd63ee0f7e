//! How one message batch's events are written to `events`.
//!
//! D1 charges per statement far more than per row, so a batch is written
//! with one set-based upsert (`INSERT … SELECT … FROM json_each(?)`) per
//! chunk of rows. That needs every idempotency key in the batch to be
//! distinct: a set-based upsert returns one row per row written, in no
//! defined order, and two copies of one key could not be told apart. A
//! batch that holds one key twice (a provider's duplicate sent moments
//! after the original) is written one statement per event instead, in
//! message order, so the first copy is the ingest and the second the
//! duplicate, exactly as before.

use std::ops::Range;

/// The most JSON bytes one set-based statement binds: D1 refuses a bound
/// value over 2 MB, and a large statement is retried whole.
pub const MAX_SET_JSON_BYTES: usize = 1_000_000;

/// How a batch's rows are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IngestShape {
    /// One statement per event, in order.
    PerEvent,
    /// One set-based statement per range of rows, in order.
    Sets(Vec<Range<usize>>),
}

/// The shape for rows with these idempotency `keys` and encoded sizes.
pub fn shape(keys: &[&str], row_bytes: &[usize]) -> IngestShape {
    // At most a batch of keys: compared pairwise, with no hash set.
    if (1..keys.len()).any(|i| keys[..i].contains(&keys[i])) {
        return IngestShape::PerEvent;
    }
    let mut chunks = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, &b) in row_bytes.iter().enumerate() {
        if i > start && bytes + b > MAX_SET_JSON_BYTES {
            chunks.push(start..i);
            (start, bytes) = (i, 0);
        }
        bytes += b;
    }
    if start < row_bytes.len() {
        chunks.push(start..row_bytes.len());
    }
    IngestShape::Sets(chunks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_keys_go_in_sets_chunked_by_size_and_a_repeated_key_goes_one_by_one() {
        let big = MAX_SET_JSON_BYTES / 2;
        let table: [(&[&str], &[usize], IngestShape); 5] = [
            (
                &["a", "b", "c"],
                &[10, 10, 10],
                IngestShape::Sets(std::iter::once(0..3).collect()),
            ),
            (&["a", "b", "a"], &[10, 10, 10], IngestShape::PerEvent),
            (
                &["a", "b", "c"],
                &[big, big, big],
                IngestShape::Sets(vec![0..2, 2..3]),
            ),
            // A row larger than the limit still goes, alone.
            (
                &["a", "b"],
                &[MAX_SET_JSON_BYTES + 1, 5],
                IngestShape::Sets(vec![0..1, 1..2]),
            ),
            (&[], &[], IngestShape::Sets(vec![])),
        ];
        for (keys, bytes, want) in table {
            assert_eq!(shape(keys, bytes), want, "{keys:?} {bytes:?}");
        }
    }
}
