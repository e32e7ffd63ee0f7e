//! How a list of queue messages is split into `sendBatch` calls.
//!
//! Cloudflare Queues takes at most 100 messages and 256 KB per `sendBatch`
//! and refuses a larger one whole. A `webhooks` batch of 50 events with
//! three routes each makes 150 `deliveries` messages, so one call per
//! batch is not enough; the messages go out in as few calls as fit.

use std::ops::Range;

/// The most messages one `sendBatch` takes.
pub const MAX_SEND_BATCH_MESSAGES: usize = 100;
/// The most bytes (the messages' bodies together) one `sendBatch` takes.
pub const MAX_SEND_BATCH_BYTES: usize = 256_000;

/// The ranges of messages, in order, that each go out in one `sendBatch`,
/// for messages of these encoded sizes. A message is never split; one over
/// the byte limit goes alone (and the queue refuses it, as it would anyway).
pub fn send_chunks(sizes: &[usize]) -> Vec<Range<usize>> {
    let mut chunks = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, &b) in sizes.iter().enumerate() {
        if i > start && (i - start == MAX_SEND_BATCH_MESSAGES || bytes + b > MAX_SEND_BATCH_BYTES) {
            chunks.push(start..i);
            (start, bytes) = (i, 0);
        }
        bytes += b;
    }
    if start < sizes.len() {
        chunks.push(start..sizes.len());
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_split_by_count_and_by_bytes_in_order() {
        let big = MAX_SEND_BATCH_BYTES / 2;
        let table: [(Vec<usize>, Vec<Range<usize>>); 7] = [
            (vec![], vec![]),
            (vec![200; 3], std::iter::once(0..3).collect()),
            (vec![200; 100], std::iter::once(0..100).collect()),
            // Three routes of a 50-event batch.
            (vec![250; 150], vec![0..100, 100..150]),
            (vec![10; 201], vec![0..100, 100..200, 200..201]),
            (vec![big, big, 1, big], vec![0..2, 2..4]),
            // One message over the limit goes alone.
            (
                vec![10, MAX_SEND_BATCH_BYTES + 1, 10],
                vec![0..1, 1..2, 2..3],
            ),
        ];
        for (sizes, want) in table {
            assert_eq!(send_chunks(&sizes), want, "{sizes:?}");
        }
    }
}
