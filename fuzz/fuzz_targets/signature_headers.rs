//! Every preset on hostile headers: `signature::verify` must return a
//! result, never panic, whatever the header values, body and clock.
//!
//! Input layout: `\n`-separated header values, one per name the presets
//! read (their signature, timestamp and id headers, in table order), then
//! the raw body (the rest of the input, any bytes). Values are read as
//! lossy UTF-8, since header values reach the relay as strings. The same
//! values are looked up through both `HeaderLookup` impls: a slice with
//! upper-cased names (matched case-insensitively) and a `BTreeMap` with
//! lower-case names.
#![no_main]

use hookrelay_core::signature::{
    self, Place, Request, Scheme, SigningKey, PRESETS,
};
use libfuzzer_sys::fuzz_target;
use std::collections::BTreeMap;

/// The Standard Webhooks example secret (base64 after `whsec_`), valid for
/// every key form.
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// The relay clock the seeds are signed for, and its tolerance.
const NOW_S: i64 = 1_700_000_000;

/// Fixed clocks to check, the real one first, then the extremes where
/// timestamp arithmetic would overflow if it were not checked.
const CLOCKS: [(i64, u32); 3] = [(NOW_S, 300), (i64::MAX, u32::MAX), (i64::MIN, 0)];

/// Every header name a preset reads, lower-case, without repeats.
fn header_names() -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for p in PRESETS.iter() {
        let ids = [&p.id, &p.id_fallback].into_iter().flatten().filter_map(|place| match place {
            Place::Header(h) => Some(h.to_string()),
            _ => None,
        });
        for name in p.secret_headers().into_iter().chain(ids) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names.push("content-type".into());
    names
}

fn key(scheme: &Scheme) -> SigningKey {
    SigningKey::from_secret(scheme.key_form(), SECRET).expect("the fixed secret fits every form")
}

fuzz_target!(|data: &[u8]| {
    let names = header_names();
    let mut parts = data.splitn(names.len() + 1, |&b| b == b'\n');
    let values: Vec<String> = parts
        .by_ref()
        .take(names.len())
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect();
    let body = parts.next().unwrap_or_default();
    let upper: Vec<(String, String)> = names
        .iter()
        .zip(&values)
        .map(|(n, v)| (n.to_ascii_uppercase(), v.clone()))
        .collect();
    let map: BTreeMap<String, String> = names.iter().cloned().zip(values.iter().cloned()).collect();
    let form = hookrelay_core::form::is_form(map.get("content-type").map(String::as_str));

    for scheme in PRESETS.iter() {
        let keys = [key(scheme)];
        for (now_s, tolerance_s) in CLOCKS {
            let slice_req = Request { method: "POST", url: "https://r.example/webhooks/a?bodySHA256=00", headers: &upper[..], body, form };
            let map_req = Request { method: "POST", url: "https://r.example/webhooks/a?bodySHA256=00", headers: &map, body, form };
            let by_slice = signature::verify(scheme, &keys, &slice_req, now_s, tolerance_s);
            let by_map = signature::verify(scheme, &keys, &map_req, now_s, tolerance_s);
            // Error texts are formatted for responses and logs; formatting must not panic.
            if let Err(e) = &by_slice {
                let _ = e.to_string();
            }
            // The two lookups see the same headers, so they must agree.
            assert_eq!(by_slice, by_map, "{} at now={now_s}", scheme.name);
        }
    }

    // What the older schemes sign for the fuzzed body must verify.
    let now_text = NOW_S.to_string();
    let std = signature::standard_webhooks();
    let sig = signature::sign_standard_webhooks(&key(std), "msg_fuzz", NOW_S, body);
    let hs = [("webhook-id", "msg_fuzz"), ("webhook-timestamp", now_text.as_str()), ("webhook-signature", sig.as_str())];
    assert!(signature::verify_one(std, &key(std), &hs[..], body, NOW_S, 0).is_ok());
    let stripe = signature::stripe();
    let sig = signature::sign_stripe(&key(stripe), NOW_S, body);
    let hs = [("stripe-signature", sig.as_str())];
    assert!(signature::verify_one(stripe, &key(stripe), &hs[..], body, NOW_S, 0).is_ok());
    let github = signature::github();
    let sig = signature::sign_github(&key(github), body);
    let hs = [("x-hub-signature-256", sig.as_str())];
    assert!(signature::verify_one(github, &key(github), &hs[..], body, NOW_S, 0).is_ok());
    let hmac = signature::hmac_sha256();
    let sig = signature::sign_hmac_sha256(&key(hmac), NOW_S, body);
    let hs = [("x-timestamp", now_text.as_str()), ("x-signature", sig.as_str())];
    assert!(signature::verify_one(hmac, &key(hmac), &hs[..], body, NOW_S, 0).is_ok());
});
