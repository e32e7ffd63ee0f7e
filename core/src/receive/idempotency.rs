//! Event identity.
//!
//! An event's identity is its idempotency key, `{source}:{delivery id}`, or
//! `{source}:sha256:{hex}` of the source and body when the provider sends no
//! delivery id. The event id is derived from the key, so a provider's
//! duplicate delivery gets the same event id as the original.

use sha2::{Digest, Sha256};

/// The longest provider delivery id accepted; longer ones are refused as bad input.
pub const MAX_DELIVERY_ID_LEN: usize = 256;

/// The idempotency key of an event from `source`.
pub fn idempotency_key(source: &str, delivery_id: Option<&str>, body: &[u8]) -> String {
    match delivery_id {
        Some(id) if !id.is_empty() => format!("{source}:{id}"),
        _ => format!("{source}:sha256:{}", content_hash(source, body)),
    }
}

/// The event id for an idempotency key: `evt_` and 32 hex digits of its SHA-256.
pub fn event_id(idempotency_key: &str) -> String {
    let digest = Sha256::digest(idempotency_key.as_bytes());
    format!("evt_{}", &hex::encode(digest)[..32])
}

/// Hex SHA-256 of the source name, a zero byte, and the body. The zero byte
/// keeps `("ab", "c")` and `("a", "bc")` apart. (An ingest dead letter stored
/// before DESIGN §4 keyed its entry on it too; new entries key on
/// `dead_letter::envelope::delivery::dedupe_hash`.)
pub fn content_hash(source: &str, body: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(source.as_bytes());
    h.update([0u8]);
    h.update(body);
    hex::encode(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_provider_delivery_id_makes_the_key() {
        let table = [
            ("demo-standard", Some("msg_1"), "demo-standard:msg_1"),
            ("demo-stripe", Some("evt_1NG8"), "demo-stripe:evt_1NG8"),
            (
                "demo-github",
                Some("72d3162e-cc78-11e3-81ab-4c9367dc0958"),
                "demo-github:72d3162e-cc78-11e3-81ab-4c9367dc0958",
            ),
        ];
        for (source, id, want) in table {
            assert_eq!(idempotency_key(source, id, b"{}"), want);
        }
    }

    #[test]
    fn without_a_delivery_id_the_key_hashes_source_and_body() {
        let a = idempotency_key("demo-hmac", None, b"{\"a\":1}");
        assert_eq!(a, idempotency_key("demo-hmac", Some(""), b"{\"a\":1}"));
        assert!(a.starts_with("demo-hmac:sha256:"));
        assert_eq!(a.len(), "demo-hmac:sha256:".len() + 64);
        assert_ne!(a, idempotency_key("demo-hmac", None, b"{\"a\":2}"));
        assert_ne!(a, idempotency_key("other", None, b"{\"a\":1}"));
    }

    #[test]
    fn the_content_hash_separates_source_from_body() {
        assert_ne!(content_hash("ab", b"c"), content_hash("a", b"bc"));
        // Computed independently with `printf 's\0b' | sha256sum`.
        assert_eq!(
            content_hash("s", b"b"),
            "6b75b146daff034d6126c349ec69b65b52bbfeee17b29ab0550eeea11e259980"
        );
    }

    #[test]
    fn the_event_id_is_stable_for_a_key() {
        let id = event_id("demo-stripe:evt_1");
        assert_eq!(id, event_id("demo-stripe:evt_1"));
        assert_ne!(id, event_id("demo-stripe:evt_2"));
        assert!(id.starts_with("evt_") && id.len() == 36);
    }
}
