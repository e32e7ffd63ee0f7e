//! Stripe's `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>…]`.
//!
//! The signed content is `{t}.{raw body}`, keyed with the whole secret string
//! (`whsec_` included). Stripe sends one `v1` per active secret while a
//! secret is being rolled, so any one may match; other keys such as the
//! legacy `v0` are ignored.

use super::{
    any_matches, check_fresh, compute, parse_timestamp, required, usable_macs, HeaderLookup,
    SignatureError, SigningKey, Verified,
};

const SIGNATURE: &str = "stripe-signature";

/// Verifies a Stripe request.
///
/// The header is read completely before the clock is consulted, and the
/// clock before any MAC, so a stale request is reported as stale even when
/// its signature is also wrong. Stripe's event id lives in the body, so
/// `delivery_id` is always `None` here.
pub(super) fn verify(
    key: &SigningKey,
    headers: &(impl HeaderLookup + ?Sized),
    body: &[u8],
    now_s: i64,
    tolerance_s: u32,
) -> Result<Verified, SignatureError> {
    let (timestamp, presented) = parse_header(required(headers, SIGNATURE)?)?;
    check_fresh(timestamp, now_s, tolerance_s, SIGNATURE)?;

    // Signed in canonical decimal form, as Stripe's own libraries re-format
    // the parsed integer rather than reuse the header text.
    let timestamp_text = timestamp.to_string();
    let parts = signed_parts(&timestamp_text, body);
    any_matches(key, &parts, &presented)?;
    Ok(Verified {
        delivery_id: None,
        timestamp: Some(timestamp),
    })
}

/// Signs like Stripe, returning the whole `t=…,v1=…` header value.
pub fn sign(key: &SigningKey, timestamp: i64, body: &[u8]) -> String {
    let timestamp_text = timestamp.to_string();
    let mac = compute(key, &signed_parts(&timestamp_text, body));
    format!("t={timestamp_text},v1={}", hex::encode(mac))
}

fn signed_parts<'a>(timestamp: &'a str, body: &'a [u8]) -> [&'a [u8]; 3] {
    [timestamp.as_bytes(), b".", body]
}

/// The timestamp and the decoded `v1` MACs.
///
/// A `v1` value that is not 64 hex digits is skipped rather than refused, so
/// one garbled entry cannot hide a valid one during rotation; only a header
/// with no usable `v1` at all is malformed. Items without `=` are skipped
/// too, as Stripe's libraries do. Two `t=` items are refused: libraries
/// disagree on which would win, and the signature covers only one.
fn parse_header(raw: &str) -> Result<(i64, Vec<Vec<u8>>), SignatureError> {
    let mut timestamp = None;
    let mut presented = Vec::new();
    for (name, value) in raw
        .split(',')
        .filter_map(|item| item.split_once('='))
        .map(|(name, value)| (name.trim(), value.trim()))
    {
        match name {
            "t" if timestamp.is_some() => {
                return Err(malformed("more than one t= timestamp"));
            }
            "t" => timestamp = Some(parse_timestamp(value, SIGNATURE)?),
            "v1" => presented.extend(hex::decode(value).ok()),
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or_else(|| malformed("no t= timestamp"))?;
    let presented = usable_macs(
        presented,
        SIGNATURE,
        "no usable v1=<64 hex digits> signature",
        "more than 8 v1 signatures",
    )?;
    Ok((timestamp, presented))
}

fn malformed(reason: &'static str) -> SignatureError {
    SignatureError::Malformed {
        header: SIGNATURE,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::{self, Scheme};

    // Stripe publishes no fixed vector, so this one was computed outside
    // Rust and cross-checked two ways, with the same result:
    //   node: crypto.createHmac("sha256", "whsec_test_secret")
    //           .update('1700000000.{"id":"evt_test_webhook","object":"event"}').digest("hex")
    //   printf '%s' '1700000000.{"id":"evt_test_webhook","object":"event"}' \
    //     | openssl dgst -sha256 -hmac whsec_test_secret
    const SECRET: &str = "whsec_test_secret";
    const TS: i64 = 1_700_000_000;
    const BODY_TEXT: &str = r#"{"id":"evt_test_webhook","object":"event"}"#;
    const BODY: &[u8] = BODY_TEXT.as_bytes();
    const MAC_HEX: &str = "d95c6b7477fbd7e9f90b1b0ef5f9c7ac25abca5382460e0d988c2b2a5b71b990";
    const HEADER: &str =
        "t=1700000000,v1=d95c6b7477fbd7e9f90b1b0ef5f9c7ac25abca5382460e0d988c2b2a5b71b990";
    /// Enough of the expected MAC to notice it quoted in an error.
    const MAC_FRAGMENT: &str = "d95c6b7477fb";

    const TOLERANCE: u32 = 300;
    const OTHER_SECRET: &str = "whsec_other_secret";
    // Well-formed (64 hex digits) but signed by no one.
    const UNRELATED: &str = "0000000000000000000000000000000000000000000000000000000000000000";

    use crate::signature::test_support::Outcome;

    fn key(secret: &str) -> SigningKey {
        SigningKey::from_secret(Scheme::Stripe, secret).expect("test secret is non-empty")
    }

    fn run(secret: &str, header: &str, body: &[u8], now: i64) -> Outcome {
        run_with(secret, &[(SIGNATURE, header)], body, now)
    }

    fn run_with(secret: &str, hs: &[(&str, &str)], body: &[u8], now: i64) -> Outcome {
        signature::verify(Scheme::Stripe, &key(secret), hs, body, now, TOLERANCE)
    }

    fn verified() -> Outcome {
        Ok(Verified {
            delivery_id: None,
            timestamp: Some(TS),
        })
    }

    fn assert_outcome(name: &str, got: Outcome, want: Outcome) {
        crate::signature::test_support::assert_outcome(name, got, want, MAC_FRAGMENT);
    }

    #[test]
    fn stripe_cross_checked_vector_is_reproduced_by_sign() {
        assert_eq!(sign(&key(SECRET), TS, BODY), HEADER);
    }

    #[test]
    fn stripe_cross_checked_vector_verifies_without_a_delivery_id() {
        assert_outcome("vector", run(SECRET, HEADER, BODY, TS), verified());
    }

    #[test]
    fn stripe_altered_or_foreign_request_is_a_mismatch() {
        let retimed = HEADER.replace("t=1700000000", "t=1700000001");
        let unrelated = format!("t=1700000000,v1={UNRELATED}");
        #[rustfmt::skip]
        let cases = [
            ("tampered body", SECRET, HEADER, r#"{"id":"evt_test_webhook","object":"evil"}"#),
            ("wrong secret", OTHER_SECRET, HEADER, BODY_TEXT),
            ("secret without its whsec_ prefix", "test_secret", HEADER, BODY_TEXT),
            ("timestamp changed after signing", SECRET, retimed.as_str(), BODY_TEXT),
            ("well-formed MAC from no one", SECRET, unrelated.as_str(), BODY_TEXT),
        ];
        for (name, secret, header, body) in cases {
            let got = run(secret, header, body.as_bytes(), TS + 1);
            assert_outcome(name, got, Err(SignatureError::Mismatch));
        }
    }

    #[test]
    fn stripe_missing_or_blank_header_is_reported_by_name() {
        #[rustfmt::skip]
        let cases = [
            ("no headers at all", vec![]),
            ("blank header", vec![(SIGNATURE, "  ")]),
            ("only another scheme's header", vec![("webhook-signature", HEADER)]),
        ];
        for (name, hs) in cases {
            let got = run_with(SECRET, &hs, BODY, TS);
            assert_outcome(name, got, Err(SignatureError::MissingHeader(SIGNATURE)));
        }
    }

    #[test]
    fn stripe_unreadable_header_is_reported_as_malformed() {
        const NO_T: &str = "no t= timestamp";
        const NO_V1: &str = "no usable v1=<64 hex digits> signature";
        let with_v1 = |t: &str| format!("{t},v1={MAC_HEX}");
        let no_t = with_v1("v0=1");
        let upper_keys = format!("T=1700000000,V1={MAC_HEX}");
        let two_t = with_v1("t=1700000000,t=1700000001");
        let bad_t = with_v1("t=soon");
        let min_t = with_v1("t=-9223372036854775808");
        let only_v0 = format!("t=1700000000,v0={MAC_HEX}");
        let nine = format!("t=1700000000{}", format!(",v1={UNRELATED}").repeat(9));
        #[rustfmt::skip]
        let cases = [
            ("no t", no_t.as_str(), NO_T),
            ("upper-case keys are not Stripe's", upper_keys.as_str(), NO_T),
            ("garbage without separators", "garbage", NO_T),
            ("two t", two_t.as_str(), "more than one t= timestamp"),
            ("t not a number", bad_t.as_str(), "timestamp is not an integer number of seconds"),
            ("t at i64::MIN", min_t.as_str(), "timestamp is out of range"),
            ("no v1 at all", "t=1700000000", NO_V1),
            ("only the legacy v0", only_v0.as_str(), NO_V1),
            ("v1 not hex", "t=1700000000,v1=zz5c6b74", NO_V1),
            ("v1 odd length", "t=1700000000,v1=d95c6b7", NO_V1),
            ("v1 empty", "t=1700000000,v1=", NO_V1),
            ("unicode garbage", "t=1700000000,v1=ß✓,=,,=", NO_V1),
            ("too many signatures", nine.as_str(), "more than 8 v1 signatures"),
        ];
        for (name, header, reason) in cases {
            let got = run(SECRET, header, BODY, TS);
            assert_outcome(name, got, Err(malformed(reason)));
        }
    }

    #[test]
    fn stripe_accepts_any_one_of_several_signatures_for_rotation() {
        let seven = format!(",v1={UNRELATED}").repeat(7);
        let eight = format!("t=1700000000{seven},v1={MAC_HEX}");
        #[rustfmt::skip]
        let cases = [
            ("second of two v1", format!("t=1700000000,v1={UNRELATED},v1={MAC_HEX}")),
            ("first of two v1", format!("t=1700000000,v1={MAC_HEX},v1={UNRELATED}")),
            ("alongside a legacy v0", format!("t=1700000000,v1={MAC_HEX},v0={UNRELATED}")),
            ("after a v1 that is not hex", format!("t=1700000000,v1=nothex,v1={MAC_HEX}")),
            ("t last", format!("v1={UNRELATED},v1={MAC_HEX},t=1700000000")),
            ("whitespace around items", format!(" t = 1700000000 , v1 = {MAC_HEX} ")),
            ("upper-case hex", format!("t=1700000000,v1={}", MAC_HEX.to_uppercase())),
            ("an item lacking =", format!("t=1700000000,junk,v1={MAC_HEX}")),
            ("eighth of eight", eight),
        ];
        for (name, header) in cases {
            assert_outcome(name, run(SECRET, &header, BODY, TS), verified());
        }
    }

    #[test]
    fn stripe_signature_outside_tolerance_is_refused() {
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
            let want = if accepted { verified() } else { Err(stale) };
            assert_outcome(name, run(SECRET, HEADER, BODY, now), want);
        }
    }

    #[test]
    fn stripe_stale_request_is_reported_as_stale_even_when_the_mac_is_wrong() {
        let got = run(OTHER_SECRET, HEADER, b"tampered", TS - 3600);
        assert!(matches!(got, Err(SignatureError::Stale { .. })), "{got:?}");
    }

    #[test]
    fn stripe_extreme_timestamps_are_refused_without_panicking() {
        let cases = [
            ("i64::MAX", i64::MAX, "Stale"),
            ("i64::MIN", i64::MIN, "Malformed"),
            ("i64::MIN + 1", i64::MIN + 1, "Malformed"),
            ("zero", 0, "Stale"),
        ];
        for (name, ts, kind) in cases {
            let got = run(SECRET, &format!("t={ts},v1={MAC_HEX}"), BODY, TS);
            let text = got.as_ref().map_err(ToString::to_string).expect_err(name);
            assert!(
                format!("{got:?}").starts_with(&format!("Err({kind}")),
                "{name}: {text}"
            );
        }
    }

    #[test]
    fn stripe_sign_then_verify_roundtrips() {
        #[rustfmt::skip]
        let cases: [(&str, &str, i64, &[u8]); 4] = [
            ("a whsec secret", SECRET, 1_614_265_330, b"{}"),
            ("a secret without the prefix", "plain secret", 1_700_000_000, b"payload"),
            ("an empty body", OTHER_SECRET, 0, b""),
            ("a negative timestamp", OTHER_SECRET, -5, &[0, 159, 146, 150, 255]),
        ];
        for (name, secret, ts, body) in cases {
            let k = key(secret);
            let header = sign(&k, ts, body);
            let hs = [(SIGNATURE, header.as_str())];
            let got = signature::verify(Scheme::Stripe, &k, &hs[..], body, ts, 0);
            let want = Verified {
                delivery_id: None,
                timestamp: Some(ts),
            };
            assert_eq!(got, Ok(want), "{name}");
        }
    }
}
