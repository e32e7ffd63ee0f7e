//! `SOURCES` with hostile recipes: `parse_sources` must answer a value or
//! an error naming a `SOURCES.…` key, never panic. The input is JSON text
//! (anything else is skipped: the JSON parser has its own fuzzing).
//!
//! A recipe that passes the startup checks must also be usable: a request
//! signed by it (`signature::sign`, for HMAC-SHA256 recipes) with a fixed
//! body, id and a current timestamp verifies under its key, and is a
//! `Mismatch` under another. A recipe accepted at startup that can never
//! verify its provider's requests would be a silent outage.
#![no_main]

use hookrelay_core::receive::parse_sources;
use hookrelay_core::signature::{
    self, Check, Place, Request, Scheme, SignInput, SignatureError, SigningKey, TimeUnit,
};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

const NOW_S: i64 = 1_700_000_000;
const URL: &str = "https://r.example/webhooks/acme";
const BODY: &[u8] = br#"{"id":"evt_1","n":1}"#;

/// The key from a base64 secret, with its `whsec_` prefix when the form
/// wants one.
fn signing_key(scheme: &Scheme, base64: &str) -> SigningKey {
    SigningKey::from_secret(scheme.key_form(), &format!("whsec_{base64}"))
        .or_else(|_| SigningKey::from_secret(scheme.key_form(), base64))
        .expect("a base64 secret fits every form, with or without its prefix")
}

fn header_of(place: Option<&Place>) -> Option<&str> {
    match place {
        Some(Place::Header(h)) => Some(h),
        _ => None,
    }
}

/// `value` with `leaf` at JSON Pointer `pointer`, objects made on the way
/// (a token reads as an object key, as `Value::pointer` finds it).
fn set_at(value: &mut Value, pointer: &str, leaf: Value) {
    let mut at = value;
    for token in pointer.split('/').skip(1) {
        let key = token.replace("~1", "/").replace("~0", "~");
        if !at.is_object() {
            *at = json!({});
        }
        at = at.as_object_mut().expect("made an object").entry(key).or_insert(Value::Null);
    }
    *at = leaf;
}

/// The body a request carries: the fixed one, with the timestamp at its
/// pointer when the recipe reads it from the body (a string for RFC 3339,
/// else a number), so a `{timestamp}` in the template reads what was signed.
fn body_for(scheme: &Scheme, ts: Option<&str>) -> Vec<u8> {
    let (Some(t), Some(ts)) = (scheme.timestamp.as_ref(), ts) else {
        return BODY.to_vec();
    };
    let Place::Json(pointer) = &t.at else {
        return BODY.to_vec();
    };
    let leaf = match t.unit {
        TimeUnit::Rfc3339 => Value::String(ts.to_string()),
        _ => json!(ts.parse::<i64>().expect("a unit of s or ms is a number")),
    };
    let mut body: Value = serde_json::from_slice(BODY).expect("BODY is JSON");
    set_at(&mut body, pointer, leaf);
    serde_json::to_vec(&body).expect("a Value serializes")
}

/// A request signed by the recipe verifies under its key, and only under it.
fn round_trip(scheme: &Scheme, tolerance_s: u32) {
    let Check::Mac { at, .. } = &scheme.check else {
        return;
    };
    let ts = scheme.timestamp.as_ref().map(|t| match t.unit {
        TimeUnit::Seconds => NOW_S.to_string(),
        TimeUnit::Millis => (NOW_S * 1000).to_string(),
        TimeUnit::Rfc3339 => "2023-11-14T22:13:20Z".to_string(),
    });
    let body = body_for(scheme, ts.as_deref());
    let input = SignInput { method: "POST", url: URL, body: &body, form: false, id: Some("msg_1"), timestamp: ts.as_deref() };
    let key = signing_key(scheme, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    let Some(sig) = signature::sign(scheme, &key, &input) else {
        return; // not HMAC-SHA256: its MAC runs in WebCrypto
    };
    let mut headers = vec![(at.header.to_string(), sig)];
    if let (Some(h), Some(ts)) = (header_of(scheme.timestamp.as_ref().map(|t| &t.at)), &ts) {
        headers.push((h.to_string(), ts.clone()));
    }
    if let Some(h) = header_of(scheme.id.as_ref()) {
        headers.push((h.to_string(), "msg_1".into()));
    }
    let req = Request { method: "POST", url: URL, headers: &headers[..], body: &body, form: false };
    let verdict = signature::verify(scheme, std::slice::from_ref(&key), &req, NOW_S, tolerance_s);
    assert!(verdict.is_ok(), "an accepted recipe refuses its own signature: {verdict:?} for {headers:?} under {scheme:?}");
    let other = signing_key(scheme, "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB");
    let wrong = signature::verify(scheme, &[other], &req, NOW_S, tolerance_s);
    assert_eq!(wrong, Err(SignatureError::Mismatch), "under another key: {scheme:?}");
}

fuzz_target!(|data: &[u8]| {
    let Ok(recipe) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    // As the whole scheme, and as one field of a valid recipe.
    let mut as_field = json!({"hmac": "sha256", "header": "x-sig", "encoding": "hex", "signed": "{body}"});
    if let Value::Object(fields) = &recipe {
        for (k, v) in fields {
            as_field[k] = v.clone();
        }
    }
    for scheme in [recipe.clone(), as_field] {
        match parse_sources(&json!({"acme": {"scheme": scheme}})) {
            Ok(specs) => {
                let _ = specs[0].scheme.secret_headers();
                round_trip(&specs[0].scheme, specs[0].tolerance_s);
            }
            Err(e) => assert!(e.key.starts_with("SOURCES"), "{}", e.key),
        }
    }
});
