//! The native steps on the providers' vectors (`core/tests/preset_vectors.json`,
//! written with the providers' own libraries, and the documented examples):
//! every vector is judged as the relay would, its WebCrypto step run here,
//! and the verdict is the vector's. The same vectors go through the relay's
//! WebCrypto in `tests/cli-verify.test.mjs`.

use super::super::judge::{judge, Captured};
use super::*;
use hookrelay_core::config::RelayConfig;
use serde_json::{json, Value};
use std::collections::BTreeMap;

fn vectors() -> Vec<Value> {
    [
        include_str!("../../../../core/tests/preset_vectors.json"),
        include_str!("../../../../core/tests/preset_vectors_docs.json"),
    ]
    .into_iter()
    .flat_map(|text| {
        let all: Value = serde_json::from_str(text).expect("the vectors are JSON");
        all["vectors"].as_array().expect("a vectors list").clone()
    })
    .collect()
}

/// A relay with one source, `acme`, of the vector's preset.
fn config(v: &Value) -> RelayConfig {
    let mut source = json!({"scheme": v["preset"]});
    if let Some(pk) = v["public_key"].as_str() {
        source["public_key"] = json!(pk);
    }
    let mut env: BTreeMap<String, Value> = BTreeMap::new();
    env.insert("SOURCES".into(), json!({ "acme": source }));
    if let Some(secret) = v["secret"].as_str() {
        env.insert("WEBHOOK_SECRET_ACME".into(), json!(secret));
    }
    RelayConfig::load(&env).expect("the vector's source loads")
}

fn headers(v: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = v["headers"]
        .as_object()
        .expect("headers")
        .iter()
        .map(|(k, x)| (k.to_ascii_lowercase(), x.as_str().unwrap().to_string()))
        .collect();
    out.push((
        "content-type".into(),
        v["content_type"].as_str().unwrap().into(),
    ));
    out
}

fn judged(v: &Value, body: &[u8]) -> super::super::judge::Judgement {
    let headers = headers(v);
    let req = Captured {
        method: v["method"].as_str().unwrap(),
        url: v["url"].as_str().unwrap(),
        headers: &headers,
        body,
    };
    judge(
        &config(v),
        "acme",
        &req,
        v["now_s"].as_i64().unwrap() * 1000,
    )
}

#[test]
fn every_vector_is_judged_as_its_provider_says_with_the_native_steps() {
    let vectors = vectors();
    assert!(vectors.len() > 60, "{}", vectors.len());
    for v in &vectors {
        let name = format!("{} ({})", v["preset"], v["note"]);
        let got = judged(v, v["body"].as_str().unwrap().as_bytes());
        // A vector's `valid` is its provider's library's verdict on the
        // signature and the time (a body the relay then refuses is still
        // validly signed).
        let verified = got.signature.verdict == "valid" && got.freshness.verdict != "stale";
        assert_eq!(verified, v["valid"].as_bool().unwrap(), "{name}: {got:?}");
        if got.accepted() {
            assert!(verified, "{name}");
        }
    }
}

#[test]
fn a_tampered_body_fails_the_signature_of_every_signed_vector() {
    for v in vectors()
        .iter()
        .filter(|v| v["valid"] == true && v["preset"] != "gitlab")
    {
        let mut body = v["body"].as_str().unwrap().as_bytes().to_vec();
        // One character of the body changed, keeping it JSON or a form.
        let at = body
            .iter()
            .rposition(|b| b.is_ascii_alphanumeric())
            .expect("a letter");
        body[at] = if body[at] == b'x' { b'y' } else { b'x' };
        let got = judged(v, &body);
        assert_eq!(got.signature.verdict, "invalid", "{}: {got:?}", v["preset"]);
        assert!(!got.accepted(), "{}", v["preset"]);
    }
}

#[test]
fn the_native_macs_are_the_rfc_4231_and_2202_vectors() {
    // RFC 4231 test case 2 (SHA-256, SHA-512) and RFC 2202 test case 2 (SHA-1).
    let (key, data) = (b"Jefe", b"what do ya want for nothing?");
    let table = [
        (MacAlg::Sha1, "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"),
        (MacAlg::Sha256, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        (
            MacAlg::Sha512,
            "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737",
        ),
    ];
    for (alg, want) in table {
        let got = mac(alg, key, data);
        assert_eq!(hex(&got), want, "{alg:?}");
        assert!(verify_mac(alg, key, data, &got));
        assert!(!verify_mac(alg, b"jefe", data, &got));
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
