//! Standard Webhooks (<https://www.standardwebhooks.com/>), symmetric `v1`
//! signatures only.
//!
//! The signed content is `{webhook-id}.{webhook-timestamp}.{raw body}`, keyed
//! with the base64-decoded secret. `webhook-signature` carries space-separated
//! `v1,<base64>` entries, one per active secret, so any one may match.

use crate::base64::STANDARD;

use super::{
    any_matches, check_fresh, compute, parse_timestamp, required, usable_macs, HeaderLookup,
    SignatureError, SigningKey, Verified,
};

const ID: &str = "webhook-id";
const TIMESTAMP: &str = "webhook-timestamp";
const SIGNATURE: &str = "webhook-signature";

/// The prefix senders put in front of the base64 secret; optional, because
/// the reference libraries accept the bare base64 too.
const SECRET_PREFIX: &str = "whsec_";

/// Decodes a configured `whsec_…` secret into HMAC key bytes.
///
/// The error text never repeats the secret or any part of it, because
/// configuration errors end up in logs.
pub(super) fn decode_secret(secret: &str) -> Result<Vec<u8>, String> {
    // A trailing newline from a secrets file is never part of the base64.
    let encoded = secret.trim();
    let encoded = encoded.strip_prefix(SECRET_PREFIX).unwrap_or(encoded);
    if encoded.is_empty() {
        return Err("the standard-webhooks secret has nothing after the whsec_ prefix".into());
    }
    // The decoder's own error names the offending character and offset,
    // which would leak part of the secret, so it is replaced wholesale.
    match STANDARD.decode(encoded) {
        Ok(key) if !key.is_empty() => Ok(key),
        _ => Err(
            "the standard-webhooks secret is not padded standard base64 \
                  after the optional whsec_ prefix"
                .into(),
        ),
    }
}

/// Verifies a Standard Webhooks request.
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
    let id = required(headers, ID)?;
    let raw_timestamp = required(headers, TIMESTAMP)?;
    let raw_signatures = required(headers, SIGNATURE)?;

    let timestamp = parse_timestamp(raw_timestamp, TIMESTAMP)?;
    let presented = parse_signatures(raw_signatures)?;
    check_fresh(timestamp, now_s, tolerance_s, TIMESTAMP)?;

    // The timestamp is signed in its canonical decimal form, as the
    // reference libraries re-format the parsed integer rather than reuse
    // the header text.
    let timestamp_text = timestamp.to_string();
    let parts = signed_parts(id, &timestamp_text, body);
    any_matches(key, &parts, &presented)?;
    Ok(Verified {
        delivery_id: Some(id.to_owned()),
        timestamp: Some(timestamp),
    })
}

/// Signs like a Standard Webhooks sender, returning one `v1,<base64>`
/// header entry.
pub fn sign(key: &SigningKey, id: &str, timestamp: i64, body: &[u8]) -> String {
    let timestamp_text = timestamp.to_string();
    let mac = compute(key, &signed_parts(id, &timestamp_text, body));
    format!("v1,{}", STANDARD.encode(mac))
}

fn signed_parts<'a>(id: &'a str, timestamp: &'a str, body: &'a [u8]) -> [&'a [u8]; 5] {
    [id.as_bytes(), b".", timestamp.as_bytes(), b".", body]
}

/// The decoded `v1` MACs in the header. Entries of other versions (`v1a`
/// is the asymmetric scheme) are skipped.
fn parse_signatures(raw: &str) -> Result<Vec<Vec<u8>>, SignatureError> {
    let candidates = raw
        .split_ascii_whitespace()
        .filter_map(|entry| entry.split_once(','))
        .filter(|(version, _)| *version == "v1")
        .filter_map(|(_, encoded)| STANDARD.decode(encoded).ok());
    usable_macs(
        candidates,
        SIGNATURE,
        "no usable v1,<base64 HMAC-SHA256> entry",
        "more than 8 v1 signatures",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::{self, Scheme};

    // Published in the Standard Webhooks reference libraries' tests
    // (standard-webhooks/standard-webhooks, libraries/php/tests/WebhookTest.php,
    // testSignFunctionWorks) and recomputed independently with node and python.
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID_VALUE: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TS: i64 = 1_614_265_330;
    const TS_TEXT: &str = "1614265330";
    const BODY_TEXT: &str = r#"{"test": 2432232314}"#;
    const BODY: &[u8] = BODY_TEXT.as_bytes();
    const EXPECTED: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
    /// Enough of the expected MAC to notice it quoted in an error.
    const EXPECTED_FRAGMENT: &str = "g0hM9SsE";

    const TOLERANCE: u32 = 300;
    const OTHER_SECRET: &str = "whsec_c2Vjb25kLXNlY3JldC1mb3ItdGVzdHM=";
    // Well-formed (32 bytes) but signed by no one.
    const UNRELATED: &str = "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";

    fn key(secret: &str) -> SigningKey {
        SigningKey::from_secret(Scheme::StandardWebhooks, secret).expect("test secret decodes")
    }

    fn headers<'a>(id: &'a str, ts: &'a str, sig: &'a str) -> Vec<(&'a str, &'a str)> {
        vec![(ID, id), (TIMESTAMP, ts), (SIGNATURE, sig)]
    }

    fn run(secret: &str, hs: &[(&str, &str)], body: &[u8], now: i64) -> Outcome {
        signature::verify(
            Scheme::StandardWebhooks,
            &key(secret),
            hs,
            body,
            now,
            TOLERANCE,
        )
    }

    use crate::signature::test_support::Outcome;

    fn verified() -> Outcome {
        Ok(Verified {
            delivery_id: Some(ID_VALUE.into()),
            timestamp: Some(TS),
        })
    }

    fn assert_outcome(name: &str, got: Outcome, want: Outcome) {
        crate::signature::test_support::assert_outcome(name, got, want, EXPECTED_FRAGMENT);
    }

    #[test]
    fn standard_webhooks_published_test_vector_is_reproduced_by_sign() {
        assert_eq!(sign(&key(SECRET), ID_VALUE, TS, BODY), EXPECTED);
    }

    #[test]
    fn standard_webhooks_published_test_vector_verifies() {
        let got = run(SECRET, &headers(ID_VALUE, TS_TEXT, EXPECTED), BODY, TS);
        assert_outcome("published vector", got, verified());
    }

    #[test]
    fn standard_webhooks_altered_or_foreign_request_is_a_mismatch() {
        #[rustfmt::skip]
        let cases = [
            ("tampered body", SECRET, ID_VALUE, EXPECTED, r#"{"test": 2432232315}"#),
            ("wrong secret", OTHER_SECRET, ID_VALUE, EXPECTED, BODY_TEXT),
            ("id changed after signing", SECRET, "msg_other", EXPECTED, BODY_TEXT),
            ("well-formed MAC from no one", SECRET, ID_VALUE, UNRELATED, BODY_TEXT),
        ];
        for (name, secret, id, sig, body) in cases {
            let got = run(secret, &headers(id, TS_TEXT, sig), body.as_bytes(), TS);
            assert_outcome(name, got, Err(SignatureError::Mismatch));
        }
    }

    #[test]
    fn standard_webhooks_missing_or_blank_headers_are_reported_by_name() {
        #[rustfmt::skip]
        let cases = [
            ("id missing", vec![(TIMESTAMP, TS_TEXT), (SIGNATURE, EXPECTED)], ID),
            ("timestamp missing", vec![(ID, ID_VALUE), (SIGNATURE, EXPECTED)], TIMESTAMP),
            ("signature missing", vec![(ID, ID_VALUE), (TIMESTAMP, TS_TEXT)], SIGNATURE),
            ("no headers at all", vec![], ID),
            ("blank id", headers("", TS_TEXT, EXPECTED), ID),
            ("blank signature", headers(ID_VALUE, TS_TEXT, "   "), SIGNATURE),
        ];
        for (name, hs, header) in cases {
            let got = run(SECRET, &hs, BODY, TS);
            assert_outcome(name, got, Err(SignatureError::MissingHeader(header)));
        }
    }

    #[test]
    fn standard_webhooks_unreadable_headers_are_reported_as_malformed() {
        const NOT_INTEGER: &str = "timestamp is not an integer number of seconds";
        const OUT_OF_RANGE: &str = "timestamp is out of range";
        const NO_V1: &str = "no usable v1,<base64 HMAC-SHA256> entry";
        const TOO_MANY: &str = "more than 8 v1 signatures";
        let v1a = EXPECTED.replacen("v1,", "v1a,", 1);
        let nine = [UNRELATED; 9].join(" ");
        #[rustfmt::skip]
        let cases = [
            ("timestamp not a number", "yesterday", EXPECTED, TIMESTAMP, NOT_INTEGER),
            ("timestamp with a fraction", "1614265330.5", EXPECTED, TIMESTAMP, NOT_INTEGER),
            ("timestamp beyond i64", "99999999999999999999", EXPECTED, TIMESTAMP, NOT_INTEGER),
            ("timestamp at i64::MIN", "-9223372036854775808", EXPECTED, TIMESTAMP, OUT_OF_RANGE),
            ("only an asymmetric v1a entry", TS_TEXT, v1a.as_str(), SIGNATURE, NO_V1),
            ("entry without a version", TS_TEXT, &EXPECTED[3..], SIGNATURE, NO_V1),
            ("v1 entry that is not base64", TS_TEXT, "v1,not*base64!", SIGNATURE, NO_V1),
            ("v1 entry of the wrong length", TS_TEXT, &EXPECTED[..20], SIGNATURE, NO_V1),
            ("v1 entry that is empty", TS_TEXT, "v1,", SIGNATURE, NO_V1),
            ("unicode garbage", TS_TEXT, "v1,ß✓ v1,\u{0}", SIGNATURE, NO_V1),
            ("too many signatures", TS_TEXT, nine.as_str(), SIGNATURE, TOO_MANY),
        ];
        for (name, ts, sig, header, reason) in cases {
            let got = run(SECRET, &headers(ID_VALUE, ts, sig), BODY, TS);
            assert_outcome(name, got, Err(SignatureError::Malformed { header, reason }));
        }
    }

    #[test]
    fn standard_webhooks_accepts_any_one_of_several_signatures_for_rotation() {
        #[rustfmt::skip]
        let cases = [
            ("second of two v1 entries", format!("{UNRELATED} {EXPECTED}")),
            ("first of two v1 entries", format!("{EXPECTED} {UNRELATED}")),
            ("after other versions", format!("v1a,abc v2,{} {EXPECTED}", &EXPECTED[3..])),
            ("after an undecodable v1 entry", format!("v1,%%% {EXPECTED}")),
            ("with extra spaces", format!("  {UNRELATED}   {EXPECTED}  ")),
            ("eighth of eight", format!("{} {EXPECTED}", [UNRELATED; 7].join(" "))),
        ];
        for (name, sig) in cases {
            let got = run(SECRET, &headers(ID_VALUE, TS_TEXT, &sig), BODY, TS);
            assert_outcome(name, got, verified());
        }
    }

    #[test]
    fn standard_webhooks_signature_outside_tolerance_is_refused() {
        let tol = i64::from(TOLERANCE);
        let cases = [
            ("signed exactly tolerance ago", TS + tol, true),
            ("signed one second too long ago", TS + tol + 1, false),
            ("signed exactly tolerance ahead", TS - tol, true),
            ("signed one second too far ahead", TS - tol - 1, false),
            ("signed now", TS, true),
        ];
        for (name, now, accepted) in cases {
            let got = run(SECRET, &headers(ID_VALUE, TS_TEXT, EXPECTED), BODY, now);
            let stale = SignatureError::Stale {
                timestamp: TS,
                now,
                tolerance_s: TOLERANCE,
            };
            assert_outcome(name, got, if accepted { verified() } else { Err(stale) });
        }
    }

    #[test]
    fn standard_webhooks_stale_request_is_reported_as_stale_even_when_the_mac_is_wrong() {
        let hs = headers(ID_VALUE, TS_TEXT, UNRELATED);
        let got = run(OTHER_SECRET, &hs, b"tampered", TS + 3600);
        assert!(matches!(got, Err(SignatureError::Stale { .. })), "{got:?}");
    }

    #[test]
    fn standard_webhooks_extreme_timestamps_are_refused_without_panicking() {
        let cases = [
            ("i64::MAX", i64::MAX, "Stale"),
            ("i64::MIN", i64::MIN, "Malformed"),
            ("i64::MIN + 1", i64::MIN + 1, "Malformed"),
            ("zero", 0, "Stale"),
        ];
        for (name, ts, kind) in cases {
            let ts_text = ts.to_string();
            let got = run(SECRET, &headers(ID_VALUE, &ts_text, EXPECTED), BODY, TS);
            let text = got.as_ref().map_err(ToString::to_string).expect_err(name);
            assert!(
                format!("{got:?}").starts_with(&format!("Err({kind}")),
                "{name}: {text}"
            );
        }
    }

    #[test]
    fn standard_webhooks_sign_then_verify_roundtrips() {
        #[rustfmt::skip]
        let cases: [(&str, &str, i64, &[u8]); 4] = [
            ("the vector's secret", SECRET, 1_700_000_000, b"{}"),
            ("an unprefixed secret", "c2Vjb25kLXNlY3JldC1mb3ItdGVzdHM=", 7, b"payload"),
            ("an empty body", OTHER_SECRET, 0, b""),
            ("a binary body", OTHER_SECRET, 42, &[0, 159, 146, 150, 255]),
        ];
        for (name, secret, ts, body) in cases {
            let k = key(secret);
            let sig = sign(&k, "msg_roundtrip", ts, body);
            let ts_text = ts.to_string();
            let hs = headers("msg_roundtrip", &ts_text, &sig);
            let got = signature::verify(Scheme::StandardWebhooks, &k, &hs[..], body, ts, 0);
            let want = Verified {
                delivery_id: Some("msg_roundtrip".into()),
                timestamp: Some(ts),
            };
            assert_eq!(got, Ok(want), "{name}");
        }
    }

    #[test]
    fn standard_webhooks_secret_prefix_is_optional() {
        let bare = SECRET.trim_start_matches(SECRET_PREFIX);
        assert_eq!(decode_secret(SECRET), decode_secret(bare));
        assert_eq!(decode_secret(SECRET).map(|k| k.len()), Ok(24));
        assert_eq!(decode_secret(&format!("{SECRET}\n")), decode_secret(SECRET));
    }

    #[test]
    fn standard_webhooks_bad_secrets_are_refused_without_echoing_them() {
        let cases = [
            ("prefix only", "whsec_", None),
            ("not base64", "whsec_s3cr3t-with-dash!", Some("s3cr3t")),
            ("missing padding", "whsec_c2Vjb25kLXM", Some("c2Vjb25k")),
            ("url-safe alphabet", "whsec_ab-_cd-_", Some("ab-_")),
        ];
        for (name, secret, fragment) in cases {
            let err = decode_secret(secret).expect_err(name);
            assert!(err.contains("standard-webhooks secret"), "{name}: {err}");
            if let Some(fragment) = fragment {
                assert!(!err.contains(fragment), "{name}: echoes the secret: {err}");
            }
        }
    }
}
