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
//!
//! Random header values rarely get past a preset's parser (a signature of
//! the right length, a fresh timestamp), so each preset is also driven
//! three more ways from the same input:
//! - its own headers: the first three values become that preset's
//!   signature, timestamp and id headers, so every preset's parser reads
//!   the first line;
//! - a clock with a tolerance of `u32::MAX`, so almost any integer
//!   timestamp is fresh and the template and the MAC are reached;
//! - a request signed as its provider would (`signature::sign`, for the
//!   HMAC-SHA256 presets), with the fuzzed body, the first value as the
//!   delivery id and the second as the timestamp's offset within the
//!   tolerance: it must verify under the key, and be a `Mismatch` under
//!   another.
#![no_main]

use hookrelay_core::signature::{
    self, Check, Place, Request, Scheme, SignInput, SignatureError, SigningKey, TimeUnit,
    Timestamp, PRESETS,
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
const CLOCKS: [(i64, u32); 4] = [
    (NOW_S, 300),
    (NOW_S, u32::MAX),
    (i64::MAX, u32::MAX),
    (i64::MIN, 0),
];

/// The URL the requests are signed for.
const URL: &str = "https://r.example/webhooks/a?bodySHA256=00";

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

/// Another key, for the refusal a wrong secret must get.
fn other_key(scheme: &Scheme) -> SigningKey {
    let other = "whsec_QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB";
    SigningKey::from_secret(scheme.key_form(), other).expect("the other secret fits every form")
}

/// The name of the header a place reads, if it is a header.
fn header_of(place: Option<&Place>) -> Option<&str> {
    match place {
        Some(Place::Header(h)) => Some(h),
        _ => None,
    }
}

/// The header that carries the signature (or the token).
fn signature_header(scheme: &Scheme) -> &str {
    match &scheme.check {
        Check::Mac { at, .. } | Check::PublicKey { at, .. } => &at.header,
        Check::Token { header } => header,
    }
}

/// The scheme's own headers set to the first three values (signature,
/// timestamp, id), plus the content type.
fn own_headers(scheme: &Scheme, values: &[String], content_type: &str) -> Vec<(String, String)> {
    let value = |i: usize| values.get(i).cloned().unwrap_or_default();
    let mut out = vec![(signature_header(scheme).to_string(), value(0))];
    if let Some(h) = header_of(scheme.timestamp.as_ref().map(|t| &t.at)) {
        out.push((h.to_string(), value(1)));
    }
    if let Some(h) = header_of(scheme.id.as_ref()) {
        out.push((h.to_string(), value(2)));
    }
    out.push(("content-type".into(), content_type.into()));
    out
}

/// `NOW_S + offset_s` as a timestamp's text in `unit`.
fn timestamp_text(unit: TimeUnit, offset_s: i64) -> String {
    let t = NOW_S + offset_s;
    match unit {
        TimeUnit::Seconds => t.to_string(),
        TimeUnit::Millis => (t * 1000).to_string(),
        TimeUnit::Rfc3339 => {
            let (y, m, d) = hookrelay_core::support::utc::civil_from_days(t.div_euclid(86_400));
            let s = t.rem_euclid(86_400);
            format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", s / 3600, s / 60 % 60, s % 60)
        }
    }
}

/// A request signed as the provider would must verify, and must be a
/// `Mismatch` under another key.
fn round_trip(scheme: &Scheme, id_raw: &str, offset_raw: &[u8], body: &[u8], form: bool) {
    let id: String = id_raw
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "-_.:".contains(*c))
        .take(64)
        .collect();
    let id = if id.is_empty() { "msg_fuzz".to_string() } else { id };
    let tolerance = i64::from(scheme.tolerance_s.saturating_sub(1));
    let raw = i64::from(u16::from_le_bytes([
        offset_raw.first().copied().unwrap_or(0),
        offset_raw.get(1).copied().unwrap_or(0),
    ]));
    let offset = if tolerance == 0 { 0 } else { raw % (2 * tolerance + 1) - tolerance };
    let ts = scheme.timestamp.as_ref().map(|t| timestamp_text(t.unit, offset));
    let input = SignInput {
        method: "POST",
        url: URL,
        body,
        form,
        id: Some(&id),
        timestamp: ts.as_deref(),
    };
    let key = key(scheme);
    let Some(sig) = signature::sign(scheme, &key, &input) else {
        return; // not HMAC-SHA256, or a form body Twilio cannot sign
    };
    let mut headers = vec![(signature_header(scheme).to_string(), sig)];
    if let (Some(Timestamp { at: Place::Header(h), .. }), Some(ts)) = (&scheme.timestamp, &ts) {
        headers.push((h.to_string(), ts.clone()));
    }
    if let Some(h) = header_of(scheme.id.as_ref()) {
        headers.push((h.to_string(), id.clone()));
    }
    let req = Request { method: "POST", url: URL, headers: &headers[..], body, form };
    let verdict = signature::verify(scheme, std::slice::from_ref(&key), &req, NOW_S, scheme.tolerance_s);
    assert!(verdict.is_ok(), "{}: a request signed as its provider would is refused: {verdict:?}", scheme.name);
    let wrong = signature::verify(scheme, &[other_key(scheme)], &req, NOW_S, scheme.tolerance_s);
    assert_eq!(wrong, Err(SignatureError::Mismatch), "{} under another key", scheme.name);
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
    // `BTreeMap`'s lookup lower-cases the name it is asked for, so its keys
    // are lower-case (a delivery id's name keeps its provider's spelling).
    let map: BTreeMap<String, String> =
        names.iter().map(|n| n.to_ascii_lowercase()).zip(values.iter().cloned()).collect();
    let form = hookrelay_core::support::form::is_form(map.get("content-type").map(String::as_str));

    let content_type = map.get("content-type").cloned().unwrap_or_default();
    for scheme in PRESETS.iter() {
        let keys = [key(scheme)];
        for (now_s, tolerance_s) in CLOCKS {
            let slice_req = Request { method: "POST", url: URL, headers: &upper[..], body, form };
            let map_req = Request { method: "POST", url: URL, headers: &map, body, form };
            let by_slice = signature::verify(scheme, &keys, &slice_req, now_s, tolerance_s);
            let by_map = signature::verify(scheme, &keys, &map_req, now_s, tolerance_s);
            // Error texts are formatted for responses and logs; formatting must not panic.
            if let Err(e) = &by_slice {
                let _ = e.to_string();
            }
            // The two lookups see the same headers, so they must agree.
            assert_eq!(by_slice, by_map, "{} at now={now_s}", scheme.name);
        }
        let own = own_headers(scheme, &values, &content_type);
        let own_map: BTreeMap<String, String> =
            own.iter().map(|(n, v)| (n.to_ascii_lowercase(), v.clone())).collect();
        for (now_s, tolerance_s) in &CLOCKS[..2] {
            let slice_req = Request { method: "POST", url: URL, headers: &own[..], body, form };
            let map_req = Request { method: "POST", url: URL, headers: &own_map, body, form };
            let by_slice = signature::verify(scheme, &keys, &slice_req, *now_s, *tolerance_s);
            if let Err(e) = &by_slice {
                let _ = e.to_string();
            }
            let by_map = signature::verify(scheme, &keys, &map_req, *now_s, *tolerance_s);
            assert_eq!(by_slice, by_map, "{} on its own headers", scheme.name);
        }
        let first = values.first().map(String::as_str).unwrap_or_default();
        let second = values.get(1).map(String::as_bytes).unwrap_or_default();
        round_trip(scheme, first, second, body, form);
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
