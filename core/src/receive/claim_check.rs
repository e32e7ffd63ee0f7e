//! The claim check for bodies too large for a queue message.
//!
//! Cloudflare Queues refuses a message over 128 KB. An event whose encoded
//! message would exceed [`INLINE_MESSAGE_LIMIT_BYTES`] has its body written
//! to D1 first; the message then carries a reference instead of the body.

/// The largest encoded message sent inline. It stays below the 128 KB
/// platform limit to leave room for the platform's own framing.
pub const INLINE_MESSAGE_LIMIT_BYTES: usize = 120_000;

/// Whether a message of `encoded_len` bytes (its JSON encoding, as the queue
/// stores it) can go on the queue as it is.
pub fn fits_inline(encoded_len: usize) -> bool {
    encoded_len <= INLINE_MESSAGE_LIMIT_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_up_to_the_limit_go_inline_and_larger_ones_are_claim_checked() {
        let table = [
            (0, true),
            (120_000, true),
            (120_001, false),
            (300_000, false),
        ];
        for (len, inline) in table {
            assert_eq!(fits_inline(len), inline, "{len}");
        }
    }
}
