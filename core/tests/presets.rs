//! Every preset against its golden vectors: `preset_vectors.json`, made
//! with the providers' own libraries (`scripts/preset-vectors/`), and
//! `preset_vectors_docs.json`, from the providers' documented examples and
//! recipes (`scripts/preset-vectors-docs.mjs`). Through the
//! front door, a signed request is accepted and keyed by the preset's
//! delivery id (or answered, for a handshake); tampered, stale and unsigned
//! copies are refused with 401.

use hookrelay_core::config::RelayConfig;
use hookrelay_core::receive::front_door::{
    accept, accept_signed, Accepted, Admission, Inbound, Rejection,
};
use hookrelay_core::receive::idempotency::idempotency_key;
use hookrelay_core::signature::{
    preset, Check, Deferred, HmacCheck, MacAlg, SignatureError, PRESETS,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;

fn vectors() -> Vec<Value> {
    [
        include_str!("preset_vectors.json"),
        include_str!("preset_vectors_docs.json"),
    ]
    .into_iter()
    .flat_map(|text| {
        let all: Value = serde_json::from_str(text).expect("the vectors are JSON");
        all["vectors"].as_array().expect("a vectors list").clone()
    })
    .collect()
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str()
        .unwrap_or_else(|| panic!("vector field {k}: {v}"))
}

/// A relay with one source, `acme`, of the vector's preset.
fn config(v: &Value) -> RelayConfig {
    let mut source = json!({"scheme": s(v, "preset")});
    if let Some(pk) = v["public_key"].as_str() {
        source["public_key"] = json!(pk);
    }
    // The source's own `url` (set by this file's tests, never by a golden
    // vector, whose `url` is the one received).
    if let Some(url) = v["source_url"].as_str() {
        source["url"] = json!(url);
    }
    let mut env: BTreeMap<String, Value> = BTreeMap::new();
    env.insert("SOURCES".into(), json!({ "acme": source }));
    if let Some(secret) = v["secret"].as_str() {
        env.insert("WEBHOOK_SECRET_ACME".into(), json!(secret));
    }
    RelayConfig::load(&env).unwrap_or_else(|e| panic!("{}: {e}", s(v, "preset")))
}

/// The vector's headers, lower-cased, with its content type.
fn headers(v: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = v["headers"]
        .as_object()
        .expect("headers object")
        .iter()
        .map(|(k, val)| (k.to_ascii_lowercase(), val.as_str().unwrap().to_string()))
        .collect();
    out.push(("content-type".into(), s(v, "content_type").into()));
    out
}

/// The front door's decision, with the checks left to WebCrypto done as
/// the glue does them: an HMAC-SHA1 or -SHA512 here with the RustCrypto
/// crates, a public-key signature taken as passed (the Miniflare tests
/// drive WebCrypto) once its message is seen to be the timestamp then the
/// body.
fn run(
    v: &Value,
    headers: &[(String, String)],
    body: &str,
    now_s: i64,
) -> Result<Admission, Rejection> {
    let config = config(v);
    let req = Inbound {
        method: s(v, "method"),
        source: "acme",
        url: s(v, "url"),
        headers,
        header_list: headers,
        body: body.as_bytes(),
        now_ms: now_s * 1000,
    };
    match accept(config.front_door(), &req)? {
        Admission::Deferred {
            check: Deferred::PublicKey(check),
            verified,
            public_key,
        } => {
            assert!(public_key.is_some_and(|k| !k.is_empty()));
            let ts = headers
                .iter()
                .find(|(k, _)| k.ends_with("timestamp"))
                .unwrap();
            let message = check.message.concat(body.as_bytes());
            assert_eq!(message, format!("{}{body}", ts.1).into_bytes());
            accept_signed(config.front_door(), &req, verified)
        }
        Admission::Deferred {
            check: Deferred::Hmac(check),
            verified,
            ..
        } => {
            if !hmac_holds(&check, body.as_bytes()) {
                return Err(Rejection::Signature(SignatureError::Mismatch));
            }
            accept_signed(config.front_door(), &req, verified)
        }
        other => Ok(other),
    }
}

/// What the glue asks WebCrypto: does any signature match any message
/// under any key?
fn hmac_holds(check: &HmacCheck, body: &[u8]) -> bool {
    use hmac::{Hmac, Mac};
    let texts = check.messages.iter().map(|m| m.concat(body));
    texts.into_iter().any(|message| {
        check.keys.iter().any(|key| {
            let computed = match check.alg {
                MacAlg::Sha1 => {
                    let mut m = Hmac::<sha1::Sha1>::new_from_slice(key).unwrap();
                    m.update(&message);
                    m.finalize().into_bytes().to_vec()
                }
                MacAlg::Sha256 => {
                    let mut m = Hmac::<sha2::Sha256>::new_from_slice(key).unwrap();
                    m.update(&message);
                    m.finalize().into_bytes().to_vec()
                }
                _ => {
                    let mut m = Hmac::<sha2::Sha512>::new_from_slice(key).unwrap();
                    m.update(&message);
                    m.finalize().into_bytes().to_vec()
                }
            };
            check.signatures.contains(&computed)
        })
    })
}

fn event(got: Result<Admission, Rejection>, name: &str) -> Accepted {
    match got {
        Ok(Admission::Event(a)) => a,
        other => panic!("{name}: expected an event, got {other:?}"),
    }
}

fn is_mac(preset_name: &str) -> bool {
    !matches!(preset(preset_name).unwrap().check, Check::PublicKey { .. })
}

#[test]
fn every_preset_has_a_vector_that_is_accepted() {
    let vectors = vectors();
    for p in PRESETS.iter() {
        assert!(
            vectors
                .iter()
                .any(|v| v["preset"] == p.name.as_ref() && v["valid"] == true),
            "no valid vector for preset {}",
            p.name
        );
    }
}

#[test]
fn a_signed_request_is_accepted_and_keyed_by_its_delivery_id() {
    for v in vectors().iter().filter(|v| v["valid"] == true) {
        let name = format!("{} ({})", s(v, "preset"), s(v, "checked_by"));
        let hs = headers(v);
        let body = s(v, "body");
        let got = run(v, &hs, body, v["now_s"].as_i64().unwrap());
        if let Some(want) = v["handshake"].as_object() {
            let Ok(Admission::Handshake(reply)) = got else {
                panic!("{name}: expected a handshake answer, got {got:?}")
            };
            assert_eq!(
                reply.status,
                want["status"].as_u64().unwrap() as u16,
                "{name}"
            );
            assert_eq!(reply.content_type, want["content_type"].as_str(), "{name}");
            let same = match want["content_type"].as_str() {
                Some("application/json") => {
                    serde_json::from_str::<Value>(&reply.body).unwrap()
                        == serde_json::from_str::<Value>(s(&want.clone().into(), "body")).unwrap()
                }
                _ => reply.body == want["body"].as_str().unwrap(),
            };
            assert!(same, "{name}: answered {}", reply.body);
            continue;
        }
        let json_or_form = serde_json::from_str::<Value>(body).is_ok()
            || s(v, "content_type").starts_with("application/x-www-form-urlencoded");
        if !json_or_form {
            // The signature held (a bad one is a 401, checked first); the
            // body is then refused as neither JSON nor a form.
            let err = got.unwrap_err();
            assert_eq!((err.status(), err.code()), (400, "BAD_PAYLOAD"), "{name}");
            continue;
        }
        let accepted = event(got, &name);
        let id = v["delivery_id"].as_str();
        assert_eq!(accepted.delivery_id.as_deref(), id, "{name}");
        assert_eq!(
            accepted.idempotency_key,
            idempotency_key("acme", id, body.as_bytes()),
            "{name}"
        );
        assert_eq!(accepted.body, body, "{name}: the body is kept byte-exact");
        for (header, value) in &accepted.headers {
            let secret = v["headers"].as_object().unwrap().keys().any(|k| {
                k.eq_ignore_ascii_case(header)
                    && (k.to_ascii_lowercase().contains("signature")
                        || k.to_ascii_lowercase().contains("token")
                        || k.to_ascii_lowercase().contains("hmac"))
            });
            assert!(
                !secret || value == "[REDACTED]",
                "{name}: {header} is stored"
            );
        }
    }
}

#[test]
fn a_tampered_request_is_refused() {
    for v in vectors()
        .iter()
        .filter(|v| v["valid"] == true && is_mac(s(v, "preset")))
    {
        let name = format!("{} ({})", s(v, "preset"), s(v, "checked_by"));
        let body = s(v, "body");
        // One character changed where a form or JSON stays readable.
        let tampered = match body.find(|c: char| c.is_ascii_digit()) {
            Some(i) => {
                let d = body.as_bytes()[i];
                let swapped = if d == b'9' { '0' } else { (d + 1) as char };
                format!("{}{swapped}{}", &body[..i], &body[i + 1..])
            }
            None => format!("{body} "),
        };
        let now = v["now_s"].as_i64().unwrap();
        let got = run(v, &headers(v), &tampered, now);
        let scheme = preset(s(v, "preset")).unwrap();
        if matches!(scheme.check, Check::Token { .. }) {
            // A shared token does not cover the body: nothing to tamper with.
            assert!(got.is_ok(), "{name}");
            continue;
        }
        let err = got
            .err()
            .unwrap_or_else(|| panic!("{name}: a tampered body was accepted"));
        assert_eq!(
            (err.status(), err.code()),
            (401, "SIGNATURE_INVALID"),
            "{name}: {}",
            err.message()
        );
    }
}

#[test]
fn a_stale_request_is_refused_by_the_timestamped_presets() {
    for v in vectors().iter().filter(|v| v["valid"] == true) {
        let scheme = preset(s(v, "preset")).unwrap();
        if !scheme.has_timestamp() {
            continue;
        }
        let name = format!("{} ({})", s(v, "preset"), s(v, "checked_by"));
        let now = v["now_s"].as_i64().unwrap() + i64::from(scheme.tolerance_s) + 2;
        let err = run(v, &headers(v), s(v, "body"), now)
            .err()
            .unwrap_or_else(|| panic!("{name}: accepted"));
        assert_eq!(
            (err.status(), err.code()),
            (401, "SIGNATURE_STALE"),
            "{name}: {}",
            err.message()
        );
    }
}

#[test]
fn a_request_without_its_signature_is_refused() {
    for v in vectors().iter().filter(|v| v["valid"] == true) {
        let name = format!("{} ({})", s(v, "preset"), s(v, "checked_by"));
        let scheme = preset(s(v, "preset")).unwrap();
        let header = match &scheme.check {
            Check::Mac { at, .. } | Check::PublicKey { at, .. } => at.header.to_string(),
            Check::Token { header } => header.to_string(),
        };
        // Its other spelling too (`svix-signature` for `webhook-signature`).
        let alias = scheme.alias.as_ref().and_then(|(from, to)| {
            header
                .strip_prefix(from.as_ref())
                .map(|rest| format!("{to}{rest}"))
        });
        let hs: Vec<(String, String)> = headers(v)
            .into_iter()
            .filter(|(k, _)| *k != header && Some(k) != alias.as_ref())
            .collect();
        let err = run(v, &hs, s(v, "body"), v["now_s"].as_i64().unwrap())
            .err()
            .unwrap_or_else(|| panic!("{name}: accepted"));
        assert_eq!(
            (err.status(), err.code()),
            (401, "SIGNATURE_MISSING"),
            "{name}: {}",
            err.message()
        );
    }
}

#[test]
fn an_invalid_vector_is_refused() {
    for v in vectors().iter().filter(|v| v["valid"] == false) {
        let name = format!("{} ({}; {})", s(v, "preset"), s(v, "checked_by"), v["note"]);
        let hs = headers(v);
        let config = config(v);
        let req = Inbound {
            method: s(v, "method"),
            source: "acme",
            url: s(v, "url"),
            headers: &hs[..],
            header_list: &hs,
            body: s(v, "body").as_bytes(),
            now_ms: v["now_s"].as_i64().unwrap() * 1000,
        };
        match accept(config.front_door(), &req) {
            Err(e) => assert_eq!(e.status(), 401, "{name}: {}", e.message()),
            // Only WebCrypto can refuse what it is left to check.
            Ok(Admission::Deferred {
                check: Deferred::PublicKey(_),
                ..
            }) => assert!(!is_mac(s(v, "preset")), "{name}"),
            Ok(Admission::Deferred {
                check: Deferred::Hmac(check),
                ..
            }) => assert!(
                !hmac_holds(&check, s(v, "body").as_bytes()),
                "{name}: a WebCrypto HMAC would accept it"
            ),
            Ok(other) => panic!("{name}: accepted: {other:?}"),
        }
    }
}

#[test]
fn shopify_is_read_under_its_newer_header_names_too() {
    for v in vectors()
        .iter()
        .filter(|v| v["preset"] == "shopify" && v["valid"] == true)
    {
        let renamed: Vec<(String, String)> = headers(v)
            .into_iter()
            .map(|(k, val)| (k.strip_prefix("x-").unwrap_or(&k).to_string(), val))
            .collect();
        assert!(renamed.iter().any(|(k, _)| k == "shopify-hmac-sha256"));
        let got = event(
            run(v, &renamed, s(v, "body"), v["now_s"].as_i64().unwrap()),
            "shopify",
        );
        assert_eq!(got.delivery_id.as_deref(), v["delivery_id"].as_str());
        assert_eq!(got.headers["shopify-hmac-sha256"], "[REDACTED]");
    }
}

#[test]
fn a_request_signed_with_another_secret_is_refused() {
    for v in vectors()
        .iter()
        .filter(|v| v["valid"] == true && v["secret"].is_string())
    {
        let name = format!("{} ({})", s(v, "preset"), s(v, "checked_by"));
        let mut other = v.clone();
        let secret = s(v, "secret");
        other["secret"] = json!(if secret.starts_with("whsec_") {
            "whsec_c2Vjb25kLXNlY3JldA==".to_string()
        } else {
            format!("{secret}-other")
        });
        let err = run(
            &other,
            &headers(v),
            s(v, "body"),
            v["now_s"].as_i64().unwrap(),
        )
        .err()
        .unwrap_or_else(|| panic!("{name}: accepted"));
        assert_eq!(err.status(), 401, "{name}: {}", err.message());
    }
}

/// Twilio's signature of `url` and, for a form, its fields sorted, as
/// twilio's getExpectedTwilioSignature computes it (the golden vectors
/// prove that): HMAC-SHA1 by the `sha1` crate here.
fn twilio_signature(token: &str, url: &str, form: Option<&str>) -> String {
    use base64::Engine;
    use hmac::{Hmac, Mac};
    let mut fields: Vec<(String, String)> = form
        .into_iter()
        .flat_map(|f| f.split('&'))
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k.into(), v.replace("%2B", "+"))
        })
        .collect();
    fields.sort();
    let mut mac = Hmac::<sha1::Sha1>::new_from_slice(token.as_bytes()).unwrap();
    mac.update(url.as_bytes());
    for (k, v) in fields {
        mac.update(k.as_bytes());
        mac.update(v.as_bytes());
    }
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

fn twilio_headers(signature: &str, content_type: &str) -> Vec<(String, String)> {
    [
        ("x-twilio-signature", signature),
        ("i-twilio-idempotency-token", "tok-1"),
        ("content-type", content_type),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .into()
}

/// Twilio signs the URL as configured there, with or without the port:
/// a source's `url` is accepted in either form, for a form and for a JSON
/// body (whose `bodySHA256` the relay received), but no other port is
/// added.
#[test]
fn twilio_accepts_its_url_with_and_without_the_default_port() {
    let token = "twilio-port-test-token";
    let form = "To=%2B15017122661&Body=hi&From=%2B14158675310";
    let json_body = r#"{"type":"com.twilio.messaging.message.delivered"}"#;
    let q = {
        use sha2::Digest;
        format!(
            "?bodySHA256={}",
            hex::encode(sha2::Sha256::digest(json_body))
        )
    };
    let h = "https://h.example.com";
    // (the source's url, the URL signed, a JSON body, accepted)
    let table = [
        (
            format!("{h}/tw?a=1"),
            format!("{h}:443/tw?a=1"),
            false,
            true,
        ),
        (format!("{h}:443/tw"), format!("{h}/tw"), false, true),
        (
            "http://h.example.com/tw".into(),
            "http://h.example.com:80/tw".into(),
            false,
            true,
        ),
        (format!("{h}/tw"), format!("{h}/tw"), false, true),
        (format!("{h}/tw"), format!("{h}:80/tw"), false, false),
        (format!("{h}/tw"), format!("{h}:8443/tw"), false, false),
        (format!("{h}/tw"), format!("{h}:443/tw{q}"), true, true),
        (format!("{h}:443/tw"), format!("{h}/tw{q}"), true, true),
        (format!("{h}/tw"), format!("{h}:444/tw{q}"), true, false),
    ];
    for (configured, signed_url, json_sent, accepted) in table {
        let case = format!("{configured} signed over {signed_url}");
        let (body, content_type, query) = if json_sent {
            (json_body, "application/json", q.as_str())
        } else {
            (form, "application/x-www-form-urlencoded", "")
        };
        let sig = twilio_signature(token, &signed_url, (!json_sent).then_some(form));
        let v = json!({
            "preset": "twilio", "secret": token, "method": "POST", "source_url": configured,
            "url": format!("https://relay.internal/webhooks/acme{query}"),
        });
        let hs = twilio_headers(&sig, content_type);
        match run(&v, &hs, body, 1_700_000_000) {
            Ok(Admission::Event(e)) => {
                assert!(accepted, "{case}: accepted");
                assert_eq!(e.delivery_id.as_deref(), Some("tok-1"), "{case}");
            }
            Err(e) => assert!(!accepted && e.status() == 401, "{case}: {}", e.message()),
            Ok(other) => panic!("{case}: {other:?}"),
        }
        if accepted && json_sent {
            let tampered = json_body.replace("delivered", "failed");
            let err = run(&v, &hs, &tampered, 1_700_000_000).err();
            assert_eq!(err.map(|e| e.status()), Some(401), "{case}: tampered JSON");
        }
    }
}
