//! GitHub's `X-Hub-Signature-256: sha256=<hex>`.
//!
//! The MAC covers the raw body only, keyed with the secret string's bytes.
//! GitHub signs no timestamp, so there is no tolerance to enforce: replay
//! protection has to come from de-duplicating `X-GitHub-Delivery`. GitHub
//! holds one secret per webhook and sends one signature, so there is no
//! rotation list to search.

use super::{
    any_matches, compute, required, HeaderLookup, SignatureError, SigningKey, Verified, MAC_LEN,
};

const SIGNATURE: &str = "x-hub-signature-256";
const DELIVERY: &str = "x-github-delivery";

/// Verifies a GitHub request. `delivery_id` comes from `X-GitHub-Delivery`
/// when present; its absence does not fail verification, since the body's
/// integrity does not depend on it.
pub(super) fn verify(
    key: &SigningKey,
    headers: &(impl HeaderLookup + ?Sized),
    body: &[u8],
) -> Result<Verified, SignatureError> {
    let raw = required(headers, SIGNATURE)?;
    // The legacy SHA-1 header uses the same shape with `sha1=`; refusing
    // anything but `sha256=` keeps a downgrade from verifying.
    let presented = raw
        .strip_prefix("sha256=")
        .and_then(|hex_mac| hex::decode(hex_mac.trim()).ok())
        .filter(|mac| mac.len() == MAC_LEN)
        .ok_or(SignatureError::Malformed {
            header: SIGNATURE,
            reason: "value is not sha256= followed by 64 hex digits",
        })?;

    any_matches(key, &[body], std::slice::from_ref(&presented))?;
    let delivery_id = headers
        .header(DELIVERY)
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(str::to_owned);
    Ok(Verified {
        delivery_id,
        timestamp: None,
    })
}

/// Signs like GitHub, returning the whole `sha256=<hex>` header value.
pub fn sign(key: &SigningKey, body: &[u8]) -> String {
    format!("sha256={}", hex::encode(compute(key, &[body])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::{self, Scheme};

    // GitHub's own example from "Validating webhook deliveries", section
    // "Testing the webhook payload validation"
    // (docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries);
    // recomputed with node.
    const SECRET: &str = "It's a Secret to Everybody";
    const BODY: &[u8] = b"Hello, World!";
    const MAC_HEX: &str = "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
    const EXPECTED: &str =
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
    /// Enough of the expected MAC to notice it quoted in an error.
    const MAC_FRAGMENT: &str = "757107ea0eb2";
    const DELIVERY_ID: &str = "72d3162e-cc78-11e3-81ab-4c9367dc0958";
    const UNRELATED: &str =
        "sha256=0000000000000000000000000000000000000000000000000000000000000000";

    use crate::signature::test_support::Outcome;

    fn key(secret: &str) -> SigningKey {
        SigningKey::from_secret(Scheme::Github, secret).expect("test secret is non-empty")
    }

    fn run(secret: &str, hs: &[(&str, &str)], body: &[u8]) -> Outcome {
        // Any clock and tolerance will do: GitHub signs no timestamp.
        signature::verify(Scheme::Github, &key(secret), hs, body, i64::MIN, 0)
    }

    fn verified(delivery_id: Option<&str>) -> Outcome {
        Ok(Verified {
            delivery_id: delivery_id.map(str::to_owned),
            timestamp: None,
        })
    }

    fn assert_outcome(name: &str, got: Outcome, want: Outcome) {
        crate::signature::test_support::assert_outcome(name, got, want, MAC_FRAGMENT);
    }

    #[test]
    fn github_documented_test_vector_is_reproduced_by_sign() {
        assert_eq!(sign(&key(SECRET), BODY), EXPECTED);
    }

    #[test]
    fn github_documented_test_vector_verifies_with_or_without_a_delivery_id() {
        #[rustfmt::skip]
        let cases = [
            ("with a delivery id", vec![(DELIVERY, DELIVERY_ID)], Some(DELIVERY_ID)),
            ("without a delivery id", vec![], None),
            ("with a blank delivery id", vec![(DELIVERY, " ")], None),
            ("with canonical case", vec![("X-GitHub-Delivery", DELIVERY_ID)], Some(DELIVERY_ID)),
        ];
        for (name, mut hs, id) in cases {
            hs.push(("X-Hub-Signature-256", EXPECTED));
            assert_outcome(name, run(SECRET, &hs, BODY), verified(id));
        }
    }

    #[test]
    fn github_altered_or_foreign_request_is_a_mismatch() {
        let cases: [(&str, &str, &str, &[u8]); 4] = [
            ("tampered body", SECRET, EXPECTED, b"Hello, World?"),
            ("wrong secret", "It's a Secret to Nobody", EXPECTED, BODY),
            ("well-formed MAC from no one", SECRET, UNRELATED, BODY),
            ("empty body", SECRET, EXPECTED, b""),
        ];
        for (name, secret, header, body) in cases {
            let got = run(secret, &[(SIGNATURE, header)], body);
            assert_outcome(name, got, Err(SignatureError::Mismatch));
        }
    }

    #[test]
    fn github_missing_or_blank_header_is_reported_by_name() {
        let sha1_only = "sha1=7d38cdd689735b008b3c702edd92eea23791c5f6";
        #[rustfmt::skip]
        let cases = [
            ("no headers at all", vec![]),
            ("only a delivery id", vec![(DELIVERY, DELIVERY_ID)]),
            ("only the legacy sha1 header", vec![("x-hub-signature", sha1_only)]),
            ("blank header", vec![(SIGNATURE, "")]),
        ];
        for (name, hs) in cases {
            let got = run(SECRET, &hs, BODY);
            assert_outcome(name, got, Err(SignatureError::MissingHeader(SIGNATURE)));
        }
    }

    #[test]
    fn github_unreadable_header_is_reported_as_malformed() {
        let two = format!("{EXPECTED},{EXPECTED}");
        let upper_prefix = format!("SHA256={MAC_HEX}");
        #[rustfmt::skip]
        let cases = [
            ("no sha256= prefix", MAC_HEX),
            ("upper-case prefix", upper_prefix.as_str()),
            ("a sha1 value in the sha256 header", "sha1=7d38cdd689735b008b3c702edd92eea23791c5f6"),
            ("not hex", "sha256=not-hex"),
            ("odd length", "sha256=757107e"),
            ("too short", &EXPECTED[..40]),
            ("prefix only", "sha256="),
            ("two signatures in one header", two.as_str()),
            ("unicode garbage", "sha256=ß✓"),
        ];
        for (name, header) in cases {
            let got = run(SECRET, &[(SIGNATURE, header)], BODY);
            let want = SignatureError::Malformed {
                header: SIGNATURE,
                reason: "value is not sha256= followed by 64 hex digits",
            };
            assert_outcome(name, got, Err(want));
        }
    }

    #[test]
    fn github_accepts_upper_case_hex_and_stray_spaces() {
        #[rustfmt::skip]
        let cases = [
            ("upper-case hex", format!("sha256={}", MAC_HEX.to_uppercase())),
            ("space after the prefix", format!("sha256= {MAC_HEX}")),
            ("surrounding spaces", format!("  {EXPECTED}  ")),
        ];
        for (name, header) in cases {
            let got = run(SECRET, &[(SIGNATURE, &header)], BODY);
            assert_outcome(name, got, verified(None));
        }
    }

    #[test]
    fn github_sign_then_verify_roundtrips() {
        #[rustfmt::skip]
        let cases: [(&str, &str, &[u8]); 3] = [
            ("a JSON body", "s3cret", br#"{"zen":"Keep it logically awesome."}"#),
            ("an empty body", "s3cret", b""),
            ("a binary body, unicode secret", "sécret ✓", &[0, 159, 146, 150, 255]),
        ];
        for (name, secret, body) in cases {
            let k = key(secret);
            let header = sign(&k, body);
            let hs = [(SIGNATURE, header.as_str())];
            let got = signature::verify(Scheme::Github, &k, &hs[..], body, 0, 0);
            assert_eq!(got, verified(None), "{name}");
        }
    }
}
