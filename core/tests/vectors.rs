//! The shared signature vectors (`vectors.json`): each one signs to the
//! expected header value and verifies at its own timestamp. The Node suite
//! checks the same file against the providers' own libraries.

use hookrelay_core::signature::{
    github, hmac_sha256, sign_github, sign_hmac_sha256, sign_standard_webhooks, sign_stripe,
    standard_webhooks, stripe, verify_one, Scheme, SigningKey,
};
use serde_json::Value;

fn vectors(scheme: &str) -> Vec<Value> {
    let all: Value =
        serde_json::from_str(include_str!("vectors.json")).expect("vectors.json is JSON");
    all[scheme].as_array().expect("a list per scheme").clone()
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or_else(|| panic!("vector field {k}"))
}

fn key(scheme: &Scheme, v: &Value) -> SigningKey {
    SigningKey::from_secret(scheme.key_form(), s(v, "secret")).expect("vector secret is valid")
}

#[test]
fn standard_webhooks_vectors_sign_and_verify() {
    for v in vectors("standard_webhooks") {
        let (id, ts, body) = (s(&v, "id"), v["timestamp"].as_i64().unwrap(), s(&v, "body"));
        let k = key(standard_webhooks(), &v);
        assert_eq!(
            sign_standard_webhooks(&k, id, ts, body.as_bytes()),
            s(&v, "signature")
        );
        let ts_text = ts.to_string();
        let headers = [
            ("webhook-id", id),
            ("webhook-timestamp", ts_text.as_str()),
            ("webhook-signature", s(&v, "signature")),
        ];
        let verified = verify_one(
            standard_webhooks(),
            &k,
            &headers[..],
            body.as_bytes(),
            ts,
            300,
        )
        .unwrap();
        assert_eq!(verified.delivery_id.as_deref(), Some(id));
    }
}

#[test]
fn stripe_vectors_sign_and_verify() {
    for v in vectors("stripe") {
        let (ts, body) = (v["timestamp"].as_i64().unwrap(), s(&v, "body"));
        let k = key(stripe(), &v);
        assert_eq!(sign_stripe(&k, ts, body.as_bytes()), s(&v, "signature"));
        let headers = [("stripe-signature", s(&v, "signature"))];
        assert!(verify_one(stripe(), &k, &headers[..], body.as_bytes(), ts, 300).is_ok());
    }
}

#[test]
fn github_vectors_sign_and_verify() {
    for v in vectors("github") {
        let body = s(&v, "body");
        let k = key(github(), &v);
        assert_eq!(sign_github(&k, body.as_bytes()), s(&v, "signature"));
        let headers = [("x-hub-signature-256", s(&v, "signature"))];
        assert!(verify_one(github(), &k, &headers[..], body.as_bytes(), 0, 300).is_ok());
    }
}

#[test]
fn hmac_sha256_vectors_sign_and_verify() {
    for v in vectors("hmac_sha256") {
        let (ts, body) = (v["timestamp"].as_i64().unwrap(), s(&v, "body"));
        let k = key(hmac_sha256(), &v);
        assert_eq!(
            sign_hmac_sha256(&k, ts, body.as_bytes()),
            s(&v, "signature")
        );
        let ts_text = ts.to_string();
        let headers = [
            ("x-timestamp", ts_text.as_str()),
            ("x-signature", s(&v, "signature")),
        ];
        assert!(verify_one(hmac_sha256(), &k, &headers[..], body.as_bytes(), ts, 300).is_ok());
    }
}
