//! Every signature scheme on hostile headers: `signature::verify` must
//! return a result, never panic, whatever the header values and clock.
//!
//! Input layout: up to nine `\n`-separated header values, in the order of
//! `HEADER_NAMES`, then the raw body (the rest of the input, any bytes).
//! Values are read as lossy UTF-8, since header values reach the relay as
//! strings. The same values are looked up through both `HeaderLookup`
//! impls: a slice with the providers' mixed-case names (matched
//! case-insensitively) and a `BTreeMap` with lower-case names.
#![no_main]

use hookrelay_core::signature::{self, Scheme, SignatureError, SigningKey, Verified};
use libfuzzer_sys::fuzz_target;
use std::collections::BTreeMap;

/// Header names as providers spell them; `verify` looks them up lower-case.
const HEADER_NAMES: [&str; 9] = [
    "Webhook-Id",
    "Webhook-Timestamp",
    "Webhook-Signature",
    "Stripe-Signature",
    "X-Hub-Signature-256",
    "X-GitHub-Delivery",
    "X-Timestamp",
    "X-Signature",
    "X-Operation-Id",
];

/// The Standard Webhooks example secret (base64 after `whsec_`).
const STANDARD_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/// The secret the other schemes key HMAC with (the seeds are signed with it).
const SECRET: &str = "whsec_test_secret";

/// The relay clock the seeds are signed for, and its tolerance.
const NOW_S: i64 = 1_700_000_000;
const TOLERANCE_S: u32 = 300;

/// Fixed clocks to check, the real one first, then the extremes where
/// timestamp arithmetic would overflow if it were not checked.
const CLOCKS: [(i64, u32); 3] = [(NOW_S, TOLERANCE_S), (i64::MAX, u32::MAX), (i64::MIN, 0)];

fn key(scheme: Scheme) -> SigningKey {
    let secret = match scheme {
        Scheme::StandardWebhooks => STANDARD_SECRET,
        _ => SECRET,
    };
    SigningKey::from_secret(scheme, secret).expect("fixed secrets are valid")
}

fn check(scheme: Scheme, got: &Result<Verified, SignatureError>) {
    match got {
        // Error texts are formatted for responses and logs; formatting must not panic.
        Err(e) => {
            let _ = e.to_string();
        }
        Ok(v) => {
            assert_eq!(v.timestamp.is_some(), scheme.has_timestamp(), "{scheme}");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(HEADER_NAMES.len() + 1, |&b| b == b'\n');
    let values: Vec<String> = parts
        .by_ref()
        .take(HEADER_NAMES.len())
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect();
    let body = parts.next().unwrap_or_default();

    let pairs: Vec<(&str, &str)> = HEADER_NAMES
        .iter()
        .zip(&values)
        .map(|(n, v)| (*n, v.as_str()))
        .collect();
    let map: BTreeMap<String, String> = pairs
        .iter()
        .map(|(n, v)| (n.to_ascii_lowercase(), (*v).to_string()))
        .collect();

    for scheme in Scheme::ALL {
        let key = key(scheme);
        for (now_s, tolerance_s) in CLOCKS {
            let by_slice = signature::verify(scheme, &key, &pairs[..], body, now_s, tolerance_s);
            let by_map = signature::verify(scheme, &key, &map, body, now_s, tolerance_s);
            check(scheme, &by_slice);
            // The two lookups see the same headers, so they must agree.
            assert_eq!(by_slice, by_map, "{scheme} at now={now_s}");
        }
    }

    // What we sign for the fuzzed body must verify.
    let now = NOW_S;
    let std_key = key(Scheme::StandardWebhooks);
    let std_sig = signature::sign_standard_webhooks(&std_key, "msg_fuzz", now, body);
    let now_text = now.to_string();
    let std_headers = [
        ("webhook-id", "msg_fuzz"),
        ("webhook-timestamp", now_text.as_str()),
        ("webhook-signature", std_sig.as_str()),
    ];
    let got = signature::verify(
        Scheme::StandardWebhooks,
        &std_key,
        &std_headers[..],
        body,
        now,
        0,
    );
    assert!(got.is_ok(), "standard-webhooks sign/verify: {got:?}");

    let stripe_key = key(Scheme::Stripe);
    let stripe_sig = signature::sign_stripe(&stripe_key, now, body);
    let stripe_headers = [("stripe-signature", stripe_sig.as_str())];
    let got = signature::verify(
        Scheme::Stripe,
        &stripe_key,
        &stripe_headers[..],
        body,
        now,
        0,
    );
    assert!(got.is_ok(), "stripe sign/verify: {got:?}");

    let github_key = key(Scheme::Github);
    let github_sig = signature::sign_github(&github_key, body);
    let github_headers = [("x-hub-signature-256", github_sig.as_str())];
    let got = signature::verify(
        Scheme::Github,
        &github_key,
        &github_headers[..],
        body,
        now,
        0,
    );
    assert!(got.is_ok(), "github sign/verify: {got:?}");

    let hmac_key = key(Scheme::HmacSha256);
    let hmac_sig = signature::sign_hmac_sha256(&hmac_key, now, body);
    let hmac_headers = [
        ("x-timestamp", now_text.as_str()),
        ("x-signature", hmac_sig.as_str()),
    ];
    let got = signature::verify(
        Scheme::HmacSha256,
        &hmac_key,
        &hmac_headers[..],
        body,
        now,
        0,
    );
    assert!(got.is_ok(), "hmac-sha256 sign/verify: {got:?}");
});
