//! What `send` signs, checked by the relay's own rules: every preset a
//! secret keys, and recipes of each hash, encoding and layout, signed here
//! and judged as the front door judges them.

use super::super::judge::{judge, Captured};
use super::*;
use hookrelay_core::config::RelayConfig;
use hookrelay_core::signature::{preset, KeyForm, PRESETS};
use serde_json::{json, Value};
use std::collections::BTreeMap;

const NOW: i64 = 1_700_000_000_123;
const BASE: &str = "https://relay.example.com";

fn config(scheme: Value, secret: &str) -> RelayConfig {
    let mut env: BTreeMap<String, Value> = BTreeMap::new();
    env.insert("SOURCES".into(), json!({"acme": {"scheme": scheme}}));
    env.insert("WEBHOOK_SECRET_ACME".into(), json!(secret));
    RelayConfig::load(&env).expect("the source loads")
}

/// Signs a default body (or `body`) for `acme` and judges it at the same time.
fn round_trip(
    cfg: &RelayConfig,
    body: Option<&[u8]>,
    form: bool,
) -> super::super::judge::Judgement {
    let src = cfg.sources.get("acme").unwrap();
    let default = default_body(&src.spec.scheme, "dlv_1", NOW);
    let body = body.unwrap_or(&default);
    let unsigned = Unsigned {
        base: BASE,
        body,
        form,
        delivery_id: "dlv_1",
        now_ms: NOW,
    };
    let out = sign_request(src, &unsigned).expect("signs");
    let headers: Vec<(String, String)> = out
        .headers
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
        .collect();
    let req = Captured {
        method: "POST",
        url: &out.url,
        headers: &headers,
        body,
    };
    judge(cfg, "acme", &req, NOW)
}

#[test]
fn every_preset_keyed_by_a_secret_signs_what_the_relay_accepts() {
    for scheme in PRESETS.iter() {
        let name = scheme.name.as_ref();
        if matches!(scheme.check, Check::PublicKey { .. }) {
            continue;
        }
        let secret = match scheme.key_form() {
            KeyForm::Whsec => "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            KeyForm::Base64 => "c2VjcmV0",
            KeyForm::Raw => "test-secret",
        };
        let got = round_trip(&config(json!(name), secret), None, false);
        assert!(got.accepted(), "{name}: {got:?}");
        assert_eq!(got.signature.verdict, "valid", "{name}");
    }
}

#[test]
fn a_form_body_signs_for_twilio_and_slack() {
    for name in ["twilio", "slack"] {
        let got = round_trip(&config(json!(name), "s"), Some(b"b=2&a=1&a=0"), true);
        assert!(got.accepted(), "{name}: {got:?}");
    }
}

#[test]
fn recipes_of_each_hash_encoding_and_layout_sign_what_the_relay_accepts() {
    let table = [
        json!({"hmac": "sha1", "header": "X-Sig", "prefix": "sha1=", "encoding": "hex", "signed": "{body}"}),
        json!({"hmac": "sha512", "header": "X-Sig", "encoding": "base64url", "signed": "{timestamp}.{body}", "timestamp": {"header": "X-Time", "unit": "ms"}}),
        json!({"hmac": "sha256", "key": "base64", "header": "X-Sig", "encoding": "base64", "signed": "{method} {url} {id} {body}", "id": {"header": "X-Id"}}),
        json!({"hmac": "sha256", "header": "X-Sig", "parts": {"separator": ",", "timestamp": "t", "signature": "v1"}, "encoding": "hex", "signed": "{timestamp}.{body}", "timestamp": {"unit": "s"}}),
        json!({"hmac": "sha256", "header": "X-Sig", "encoding": "hex", "signed": "{body}", "timestamp": {"json": "/meta/at", "unit": "rfc3339"}, "id": {"json": "/meta/id"}}),
        json!({"token": "X-Token"}),
    ];
    for scheme in table {
        let got = round_trip(&config(scheme.clone(), "c2VjcmV0"), None, false);
        assert!(got.accepted(), "{scheme}: {got:?}");
    }
}

#[test]
fn a_public_key_source_is_refused_and_a_default_body_carries_its_id_and_time() {
    let mut env: BTreeMap<String, Value> = BTreeMap::new();
    let key = "e".repeat(64);
    env.insert(
        "SOURCES".into(),
        json!({"acme": {"scheme": "discord", "public_key": key}}),
    );
    let cfg = RelayConfig::load(&env).unwrap();
    let src = cfg.sources.get("acme").unwrap();
    let unsigned = Unsigned {
        base: BASE,
        body: b"{}",
        form: false,
        delivery_id: "d",
        now_ms: NOW,
    };
    assert!(sign_request(src, &unsigned)
        .unwrap_err()
        .contains("public-key"));
    let linear = preset("linear").unwrap();
    let body: Value = serde_json::from_slice(&default_body(linear, "d1", NOW)).unwrap();
    assert_eq!(body["webhookTimestamp"], json!(NOW));
    let pagerduty = preset("pagerduty").unwrap();
    let body: Value = serde_json::from_slice(&default_body(pagerduty, "d2", NOW)).unwrap();
    assert_eq!(body["event"]["id"], json!("d2"));
}
