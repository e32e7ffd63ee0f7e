//! The generic scheme: `X-Timestamp`, `X-Signature` (hex), optional
//! `X-Operation-Id`.
//!
//! The signed content is `{timestamp}.{raw body}`, keyed with the secret
//! string's bytes. `X-Signature` may carry several comma- or
//! space-separated signatures so a sender can overlap secrets while rotating.

use super::{
    any_matches, check_fresh, compute, parse_timestamp, required, usable_macs, HeaderLookup,
    SignatureError, SigningKey, Verified,
};

const TIMESTAMP: &str = "x-timestamp";
const SIGNATURE: &str = "x-signature";
const OPERATION_ID: &str = "x-operation-id";

/// Verifies a request signed with the generic scheme.
///
/// Headers are read completely before the clock is consulted, and the clock
/// before any MAC, so a stale request is reported as stale even when its
/// signature is also wrong.
pub(super) fn verify(
    key: &SigningKey,
    headers: &(impl HeaderLookup + ?Sized),
    body: &[u8],
    now_s: i64,
    tolerance_s: u32,
) -> Result<Verified, SignatureError> {
    let raw_timestamp = required(headers, TIMESTAMP)?;
    let raw_signatures = required(headers, SIGNATURE)?;

    let timestamp = parse_timestamp(raw_timestamp, TIMESTAMP)?;
    let presented = parse_signatures(raw_signatures)?;
    check_fresh(timestamp, now_s, tolerance_s, TIMESTAMP)?;

    // Signed in canonical decimal form so `sign` and `verify` agree whatever
    // leading zeros or `+` a sender's header might carry.
    let timestamp_text = timestamp.to_string();
    let parts = signed_parts(&timestamp_text, body);
    any_matches(key, &parts, &presented)?;
    let delivery_id = headers
        .header(OPERATION_ID)
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(str::to_owned);
    Ok(Verified {
        delivery_id,
        timestamp: Some(timestamp),
    })
}

/// Signs for the generic scheme, returning the lower-case hex `X-Signature`
/// value.
pub fn sign(key: &SigningKey, timestamp: i64, body: &[u8]) -> String {
    let timestamp_text = timestamp.to_string();
    hex::encode(compute(key, &signed_parts(&timestamp_text, body)))
}

fn signed_parts<'a>(timestamp: &'a str, body: &'a [u8]) -> [&'a [u8]; 3] {
    [timestamp.as_bytes(), b".", body]
}

/// The decoded MACs in `X-Signature`, comma- or space-separated hex.
fn parse_signatures(raw: &str) -> Result<Vec<Vec<u8>>, SignatureError> {
    let candidates = raw
        .split(|c: char| c == ',' || c.is_ascii_whitespace())
        .filter(|entry| !entry.is_empty())
        .filter_map(|entry| hex::decode(entry).ok());
    usable_macs(
        candidates,
        SIGNATURE,
        "no usable signature of 64 hex digits",
        "more than 8 signatures",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::{self, Scheme};

    // Computed outside Rust and cross-checked two ways, with the same result:
    //   node: crypto.createHmac("sha256", "generic-secret")
    //           .update('1700000000.{"op":"create"}').digest("hex")
    //   printf '%s' '1700000000.{"op":"create"}' | openssl dgst -sha256 -hmac generic-secret
    const SECRET: &str = "generic-secret";
    const TS: i64 = 1_700_000_000;
    const TS_TEXT: &str = "1700000000";
    const BODY_TEXT: &str = r#"{"op":"create"}"#;
    const BODY: &[u8] = BODY_TEXT.as_bytes();
    const EXPECTED: &str = "9345b9a499e1c189fa7df9dc32cecb6bd2ca9aa05fba50b2516d1ef8dd313a85";
    /// Enough of the expected MAC to notice it quoted in an error.
    const MAC_FRAGMENT: &str = "9345b9a499e1";
    const OP_ID: &str = "op-2024-0001";

    const TOLERANCE: u32 = 300;
    // Well-formed (64 hex digits) but signed by no one.
    const UNRELATED: &str = "0000000000000000000000000000000000000000000000000000000000000000";

    use crate::signature::test_support::Outcome;

    fn key(secret: &str) -> SigningKey {
        SigningKey::from_secret(Scheme::HmacSha256, secret).expect("test secret is non-empty")
    }

    fn headers<'a>(ts: &'a str, sig: &'a str) -> Vec<(&'a str, &'a str)> {
        vec![(TIMESTAMP, ts), (SIGNATURE, sig), (OPERATION_ID, OP_ID)]
    }

    fn run(secret: &str, hs: &[(&str, &str)], body: &[u8], now: i64) -> Outcome {
        signature::verify(Scheme::HmacSha256, &key(secret), hs, body, now, TOLERANCE)
    }

    fn verified(delivery_id: Option<&str>) -> Outcome {
        Ok(Verified {
            delivery_id: delivery_id.map(str::to_owned),
            timestamp: Some(TS),
        })
    }

    fn assert_outcome(name: &str, got: Outcome, want: Outcome) {
        crate::signature::test_support::assert_outcome(name, got, want, MAC_FRAGMENT);
    }

    #[test]
    fn hmac_sha256_cross_checked_vector_is_reproduced_by_sign() {
        assert_eq!(sign(&key(SECRET), TS, BODY), EXPECTED);
    }

    #[test]
    fn hmac_sha256_cross_checked_vector_verifies_with_or_without_an_operation_id() {
        #[rustfmt::skip]
        let cases = [
            ("with an operation id", vec![(OPERATION_ID, OP_ID)], Some(OP_ID)),
            ("without an operation id", vec![], None),
            ("with a blank operation id", vec![(OPERATION_ID, "")], None),
            ("with canonical case", vec![("X-Operation-Id", OP_ID)], Some(OP_ID)),
        ];
        for (name, mut hs, id) in cases {
            hs.extend([("X-Timestamp", TS_TEXT), ("X-Signature", EXPECTED)]);
            assert_outcome(name, run(SECRET, &hs, BODY, TS), verified(id));
        }
    }

    #[test]
    fn hmac_sha256_altered_or_foreign_request_is_a_mismatch() {
        #[rustfmt::skip]
        let cases = [
            ("tampered body", SECRET, TS_TEXT, EXPECTED, r#"{"op":"delete"}"#),
            ("wrong secret", "other-secret", TS_TEXT, EXPECTED, BODY_TEXT),
            ("timestamp changed after signing", SECRET, "1700000001", EXPECTED, BODY_TEXT),
            ("well-formed MAC from no one", SECRET, TS_TEXT, UNRELATED, BODY_TEXT),
        ];
        for (name, secret, ts, sig, body) in cases {
            let got = run(secret, &headers(ts, sig), body.as_bytes(), TS);
            assert_outcome(name, got, Err(SignatureError::Mismatch));
        }
    }

    #[test]
    fn hmac_sha256_missing_or_blank_headers_are_reported_by_name() {
        #[rustfmt::skip]
        let cases = [
            ("timestamp missing", vec![(SIGNATURE, EXPECTED)], TIMESTAMP),
            ("signature missing", vec![(TIMESTAMP, TS_TEXT)], SIGNATURE),
            ("only an operation id", vec![(OPERATION_ID, OP_ID)], TIMESTAMP),
            ("blank timestamp", headers(" ", EXPECTED), TIMESTAMP),
            ("blank signature", headers(TS_TEXT, ""), SIGNATURE),
        ];
        for (name, hs, header) in cases {
            let got = run(SECRET, &hs, BODY, TS);
            assert_outcome(name, got, Err(SignatureError::MissingHeader(header)));
        }
    }

    #[test]
    fn hmac_sha256_unreadable_headers_are_reported_as_malformed() {
        const NOT_INTEGER: &str = "timestamp is not an integer number of seconds";
        const NO_USABLE: &str = "no usable signature of 64 hex digits";
        const OUT_OF_RANGE: &str = "timestamp is out of range";
        let base64_mac = "k0W5pJnhwYn6ffncMs7La9LKmqBfulCyUW0e+N0xOoU=";
        let prefixed = format!("sha256={EXPECTED}");
        let nine = [UNRELATED; 9].join(",");
        #[rustfmt::skip]
        let cases = [
            ("timestamp not a number", "now", EXPECTED, TIMESTAMP, NOT_INTEGER),
            ("timestamp in ISO 8601", "2023-11-14T22:13:20Z", EXPECTED, TIMESTAMP, NOT_INTEGER),
            ("timestamp in milliseconds as a float", "1.7e12", EXPECTED, TIMESTAMP, NOT_INTEGER),
            ("timestamp at i64::MIN", "-9223372036854775808", EXPECTED, TIMESTAMP, OUT_OF_RANGE),
            ("only separators", TS_TEXT, " , ", SIGNATURE, NO_USABLE),
            ("signature not hex", TS_TEXT, "not-hex", SIGNATURE, NO_USABLE),
            ("signature in base64", TS_TEXT, base64_mac, SIGNATURE, NO_USABLE),
            ("signature with a sha256= prefix", TS_TEXT, prefixed.as_str(), SIGNATURE, NO_USABLE),
            ("signature too short", TS_TEXT, &EXPECTED[..62], SIGNATURE, NO_USABLE),
            ("unicode garbage", TS_TEXT, "ß✓,\u{0}", SIGNATURE, NO_USABLE),
            ("too many signatures", TS_TEXT, nine.as_str(), SIGNATURE, "more than 8 signatures"),
        ];
        for (name, ts, sig, header, reason) in cases {
            let got = run(SECRET, &headers(ts, sig), BODY, TS);
            assert_outcome(name, got, Err(SignatureError::Malformed { header, reason }));
        }
    }

    #[test]
    fn hmac_sha256_accepts_any_one_of_several_signatures_for_rotation() {
        #[rustfmt::skip]
        let cases = [
            ("second of two, comma-separated", format!("{UNRELATED},{EXPECTED}")),
            ("second of two, space-separated", format!("{UNRELATED} {EXPECTED}")),
            ("comma and space", format!("{UNRELATED}, {EXPECTED}")),
            ("first of two", format!("{EXPECTED},{UNRELATED}")),
            ("after an entry that is not hex", format!("nothex,{EXPECTED}")),
            ("upper-case hex", EXPECTED.to_uppercase()),
            ("eighth of eight", format!("{},{EXPECTED}", [UNRELATED; 7].join(","))),
        ];
        for (name, sig) in cases {
            let got = run(SECRET, &headers(TS_TEXT, &sig), BODY, TS);
            assert_outcome(name, got, verified(Some(OP_ID)));
        }
    }

    #[test]
    fn hmac_sha256_signature_outside_tolerance_is_refused() {
        let tol = i64::from(TOLERANCE);
        let cases = [
            ("signed exactly tolerance ago", TS + tol, true),
            ("signed one second too long ago", TS + tol + 1, false),
            ("signed exactly tolerance ahead", TS - tol, true),
            ("signed one second too far ahead", TS - tol - 1, false),
            ("signed now", TS, true),
        ];
        for (name, now, accepted) in cases {
            let stale = SignatureError::Stale {
                timestamp: TS,
                now,
                tolerance_s: TOLERANCE,
            };
            let want = if accepted {
                verified(Some(OP_ID))
            } else {
                Err(stale)
            };
            assert_outcome(
                name,
                run(SECRET, &headers(TS_TEXT, EXPECTED), BODY, now),
                want,
            );
        }
    }

    #[test]
    fn hmac_sha256_stale_request_is_reported_as_stale_even_when_the_mac_is_wrong() {
        let got = run(
            "other-secret",
            &headers(TS_TEXT, UNRELATED),
            b"tampered",
            TS + 86_400,
        );
        assert!(matches!(got, Err(SignatureError::Stale { .. })), "{got:?}");
    }

    #[test]
    fn hmac_sha256_extreme_timestamps_are_refused_without_panicking() {
        let cases = [
            ("i64::MAX", i64::MAX, "Stale"),
            ("i64::MIN", i64::MIN, "Malformed"),
            ("i64::MIN + 1", i64::MIN + 1, "Malformed"),
            ("zero", 0, "Stale"),
        ];
        for (name, ts, kind) in cases {
            let ts_text = ts.to_string();
            let got = run(SECRET, &headers(&ts_text, EXPECTED), BODY, TS);
            let text = got.as_ref().map_err(ToString::to_string).expect_err(name);
            assert!(
                format!("{got:?}").starts_with(&format!("Err({kind}")),
                "{name}: {text}"
            );
        }
    }

    #[test]
    fn hmac_sha256_sign_then_verify_roundtrips() {
        #[rustfmt::skip]
        let cases: [(&str, &str, i64, &[u8]); 3] = [
            ("a JSON body", SECRET, 1_614_265_330, b"{}"),
            ("an empty body", "k", 0, b""),
            ("a binary body, negative time", "sécret ✓", -5, &[0, 159, 146, 150, 255]),
        ];
        for (name, secret, ts, body) in cases {
            let k = key(secret);
            let sig = sign(&k, ts, body);
            assert_eq!(sig, sig.to_lowercase(), "{name}: not lower-case");
            let ts_text = ts.to_string();
            let hs = [(TIMESTAMP, ts_text.as_str()), (SIGNATURE, sig.as_str())];
            let got = signature::verify(Scheme::HmacSha256, &k, &hs[..], body, ts, 0);
            let want = Verified {
                delivery_id: None,
                timestamp: Some(ts),
            };
            assert_eq!(got, Ok(want), "{name}");
        }
    }
}
