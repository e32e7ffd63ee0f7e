//! The front door: from a raw request to an accepted event or a refusal.
//!
//! Order of checks: method, source, size, signature (on the raw bytes), and
//! only then the body's content. Each refusal maps to one status and one
//! stable code; the message says what to fix, never what a signature should
//! have been.

use crate::config::RelayConfig;
use crate::idempotency::{event_id, idempotency_key, MAX_DELIVERY_ID_LEN};
use crate::redact::capture_headers;
use crate::signature::{verify, HeaderLookup, Scheme, SignatureError};
use crate::UnixMillis;
use std::collections::BTreeMap;

/// A request to `/webhooks/{source}`, as the glue read it.
pub struct Inbound<'a, H: HeaderLookup + ?Sized> {
    /// The HTTP method.
    pub method: &'a str,
    /// The `{source}` path segment.
    pub source: &'a str,
    /// Header lookup for verification (lower-case names).
    pub headers: &'a H,
    /// All headers, for the redacted copy kept with the event.
    pub header_list: &'a [(String, String)],
    /// The raw body.
    pub body: &'a [u8],
    /// The relay's clock.
    pub now_ms: UnixMillis,
}

/// An event the relay will enqueue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// Derived from the idempotency key.
    pub event_id: String,
    /// The event's identity.
    pub idempotency_key: String,
    /// The source name.
    pub source: String,
    /// The provider's delivery id, if any.
    pub delivery_id: Option<String>,
    /// Redacted headers.
    pub headers: BTreeMap<String, String>,
    /// The body text (verified UTF-8 JSON).
    pub body: String,
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// Only POST is accepted.
    MethodNotAllowed,
    /// `{source}` is not configured.
    UnknownSource(String),
    /// The body exceeds `MAX_BODY_BYTES`.
    TooLarge {
        /// The configured limit.
        limit: u64,
    },
    /// The signature check failed.
    Signature(SignatureError),
    /// The body cannot be accepted by the source's scheme.
    BadBody(String),
    /// The provider's delivery id cannot become part of an idempotency key.
    BadDeliveryId {
        /// Where the id came from, e.g. `X-Operation-Id`.
        header: &'static str,
    },
}

impl Rejection {
    /// The HTTP status.
    pub fn status(&self) -> u16 {
        match self {
            Rejection::MethodNotAllowed => 405,
            Rejection::UnknownSource(_) => 404,
            Rejection::TooLarge { .. } => 413,
            Rejection::Signature(_) => 401,
            Rejection::BadBody(_) | Rejection::BadDeliveryId { .. } => 400,
        }
    }

    /// A stable machine-readable code for the response body.
    pub fn code(&self) -> &'static str {
        match self {
            Rejection::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            Rejection::UnknownSource(_) => "UNKNOWN_SOURCE",
            Rejection::TooLarge { .. } => "PAYLOAD_TOO_LARGE",
            Rejection::Signature(SignatureError::Stale { .. }) => "SIGNATURE_STALE",
            Rejection::Signature(SignatureError::MissingHeader(_)) => "SIGNATURE_MISSING",
            Rejection::Signature(_) => "SIGNATURE_INVALID",
            Rejection::BadBody(_) => "BAD_PAYLOAD",
            Rejection::BadDeliveryId { .. } => "BAD_DELIVERY_ID",
        }
    }

    /// What went wrong and what to do.
    pub fn message(&self) -> String {
        match self {
            Rejection::MethodNotAllowed => "only POST is accepted on /webhooks/{source}".into(),
            Rejection::UnknownSource(s) => format!(
                "no source named '{s}' is configured; see GET /healthz for the configured sources"
            ),
            Rejection::TooLarge { limit } => {
                format!("body exceeds the {limit}-byte limit (MAX_BODY_BYTES)")
            }
            Rejection::Signature(e) => e.to_string(),
            Rejection::BadBody(m) => m.clone(),
            Rejection::BadDeliveryId { header } => format!(
                "{header} must be 1-{MAX_DELIVERY_ID_LEN} printable ASCII characters; it becomes part of the idempotency key and of the headers sent downstream. Send a plain ASCII id"
            ),
        }
    }
}

/// The checks that need no body: method, source, and a declared
/// `Content-Length` over the limit. The glue runs them before reading the
/// body, so an oversized upload is refused without being buffered.
pub fn precheck(
    config: &RelayConfig,
    method: &str,
    source: &str,
    content_length: Option<u64>,
) -> Result<(), Rejection> {
    if !method.eq_ignore_ascii_case("POST") {
        return Err(Rejection::MethodNotAllowed);
    }
    if !config.sources.contains_key(source) {
        return Err(Rejection::UnknownSource(source.to_string()));
    }
    if content_length.is_some_and(|len| len > config.max_body_bytes) {
        return Err(Rejection::TooLarge {
            limit: config.max_body_bytes,
        });
    }
    Ok(())
}

/// Checks a request and, if it is acceptable, builds the event to enqueue.
pub fn accept<H: HeaderLookup + ?Sized>(
    config: &RelayConfig,
    req: &Inbound<'_, H>,
) -> Result<Accepted, Rejection> {
    precheck(config, req.method, req.source, Some(req.body.len() as u64))?;
    let Some(source) = config.sources.get(req.source) else {
        return Err(Rejection::UnknownSource(req.source.to_string()));
    };
    // A header-carried id is checked before the signature: header bytes
    // outside ASCII reach the worker already decoded, so a signature that
    // covers the id (standard-webhooks) could never verify, and the sender
    // would be told "signature invalid" instead of what is wrong.
    let header_id = delivery_id_header(source.spec.scheme).and_then(|h| req.headers.header(h));
    if let Some(id) = header_id {
        check_delivery_id(source.spec.scheme, id)?;
    }
    let verified = verify(
        source.spec.scheme,
        &source.key,
        req.headers,
        req.body,
        req.now_ms.div_euclid(1000),
        source.spec.tolerance_s,
    )
    .map_err(Rejection::Signature)?;

    let body = json_body(req.body, source.spec.scheme)?;
    let delivery_id = match source.spec.scheme {
        Scheme::Stripe => Some(stripe_event_id(body)?),
        _ => verified.delivery_id,
    };
    if let Some(id) = &delivery_id {
        check_delivery_id(source.spec.scheme, id)?;
    }
    let key = idempotency_key(&source.spec.name, delivery_id.as_deref(), req.body);
    Ok(Accepted {
        event_id: event_id(&key),
        idempotency_key: key,
        source: source.spec.name.clone(),
        delivery_id,
        headers: capture_headers(
            req.header_list
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str())),
        ),
        body: body.to_string(),
    })
}

/// The body as UTF-8 text, checked to be JSON. It is only validated, not
/// built into a tree: the relay forwards the raw text, and a tree of a
/// large body would cost allocations on every request.
fn json_body(raw: &[u8], scheme: Scheme) -> Result<&str, Rejection> {
    let body = std::str::from_utf8(raw)
        .map_err(|_| Rejection::BadBody("body is not UTF-8 text; send a JSON body".into()))?;
    serde_json::from_str::<serde::de::IgnoredAny>(body).map_err(|e| {
        Rejection::BadBody(format!(
            "body is not valid JSON (line {}, column {}); {scheme} webhooks must carry a JSON body",
            e.line(),
            e.column(),
        ))
    })?;
    Ok(body)
}

/// Stripe's delivery id is the event's own `id`.
/// The Stripe event's top-level `"id"`, read without building the body.
fn stripe_event_id(body: &str) -> Result<String, Rejection> {
    #[derive(serde::Deserialize)]
    struct Event {
        id: Option<serde_json::Value>,
    }
    let event: Event = serde_json::from_str(body).map_err(|_| {
        Rejection::BadBody("a Stripe event body must be a JSON object with a string \"id\"".into())
    })?;
    match event.id {
        Some(serde_json::Value::String(id)) if !id.is_empty() => Ok(id),
        _ => Err(Rejection::BadBody(
            "a Stripe event body must have a string \"id\"".into(),
        )),
    }
}

/// Where each scheme's delivery id comes from, as the refusal names it.
pub fn delivery_id_source(scheme: Scheme) -> &'static str {
    match scheme {
        Scheme::StandardWebhooks => "webhook-id",
        Scheme::Stripe => "the Stripe event's \"id\"",
        Scheme::Github => "X-GitHub-Delivery",
        Scheme::HmacSha256 => "X-Operation-Id",
    }
}

/// The (lower-case) header that carries each scheme's delivery id; Stripe
/// carries it in the body.
pub fn delivery_id_header(scheme: Scheme) -> Option<&'static str> {
    match scheme {
        Scheme::StandardWebhooks => Some("webhook-id"),
        Scheme::Stripe => None,
        Scheme::Github => Some("x-github-delivery"),
        Scheme::HmacSha256 => Some("x-operation-id"),
    }
}

/// A delivery id becomes part of the idempotency key, of the envelope and
/// of the headers sent downstream, so it must be 1-256 printable ASCII
/// characters (0x20-0x7E). Header bytes outside ASCII arrive here as the
/// characters they map to, and are refused like any other.
pub fn check_delivery_id(scheme: Scheme, id: &str) -> Result<(), Rejection> {
    let ok = !id.is_empty()
        && id.len() <= MAX_DELIVERY_ID_LEN
        && id.chars().all(|c| (' '..='~').contains(&c));
    if ok {
        Ok(())
    } else {
        Err(Rejection::BadDeliveryId {
            header: delivery_id_source(scheme),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::{
        sign_github, sign_hmac_sha256, sign_standard_webhooks, sign_stripe, SigningKey,
    };
    use serde_json::{json, Value};

    const NOW_MS: i64 = 1_700_000_000_000;
    const NOW_S: i64 = 1_700_000_000;
    const STD_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    fn config() -> RelayConfig {
        let env: BTreeMap<String, Value> = [
            ("SOURCES", json!({"std": {"scheme": "standard-webhooks"}, "str": {"scheme": "stripe"}, "gh": {"scheme": "github"}, "gen": {"scheme": "hmac-sha256"}})),
            ("WEBHOOK_SECRET_STD", json!(STD_SECRET)),
            ("WEBHOOK_SECRET_STR", json!("whsec_stripe")),
            ("WEBHOOK_SECRET_GH", json!("gh-secret")),
            ("WEBHOOK_SECRET_GEN", json!("gen-secret")),
            ("MAX_BODY_BYTES", json!("1000")),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        RelayConfig::load(&env).unwrap()
    }

    fn key(scheme: Scheme, secret: &str) -> SigningKey {
        SigningKey::from_secret(scheme, secret).unwrap()
    }

    /// A correctly signed request for each source, as header pairs.
    fn signed(source: &str, body: &str) -> Vec<(String, String)> {
        let b = body.as_bytes();
        let pairs: Vec<(&str, String)> = match source {
            "std" => vec![
                ("webhook-id", "msg_1".into()),
                ("webhook-timestamp", NOW_S.to_string()),
                (
                    "webhook-signature",
                    sign_standard_webhooks(
                        &key(Scheme::StandardWebhooks, STD_SECRET),
                        "msg_1",
                        NOW_S,
                        b,
                    ),
                ),
            ],
            "str" => vec![(
                "stripe-signature",
                sign_stripe(&key(Scheme::Stripe, "whsec_stripe"), NOW_S, b),
            )],
            "gh" => vec![
                (
                    "x-hub-signature-256",
                    sign_github(&key(Scheme::Github, "gh-secret"), b),
                ),
                ("x-github-delivery", "d-1".into()),
            ],
            "gen" => vec![
                ("x-timestamp", NOW_S.to_string()),
                (
                    "x-signature",
                    sign_hmac_sha256(&key(Scheme::HmacSha256, "gen-secret"), NOW_S, b),
                ),
            ],
            _ => vec![],
        };
        let mut out: Vec<(String, String)> =
            pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        out.push(("content-type".into(), "application/json".into()));
        out
    }

    fn run(
        method: &str,
        source: &str,
        headers: &[(String, String)],
        body: &str,
    ) -> Result<Accepted, Rejection> {
        let map: BTreeMap<String, String> = headers.iter().cloned().collect();
        accept(
            &config(),
            &Inbound {
                method,
                source,
                headers: &map,
                header_list: headers,
                body: body.as_bytes(),
                now_ms: NOW_MS,
            },
        )
    }

    #[test]
    fn a_correctly_signed_request_is_accepted_for_every_scheme() {
        let table = [
            ("std", "{\"a\":1}", "std:msg_1"),
            ("str", "{\"id\":\"evt_9\"}", "str:evt_9"),
            ("gh", "{\"zen\":\"hi\"}", "gh:d-1"),
        ];
        for (source, body, key) in table {
            let got = run("POST", source, &signed(source, body), body).unwrap();
            assert_eq!(got.idempotency_key, key);
            assert_eq!(got.body, body);
            assert_eq!(got.event_id, event_id(key));
        }
        let gen = run("POST", "gen", &signed("gen", "{}"), "{}").unwrap();
        assert!(
            gen.idempotency_key.starts_with("gen:sha256:"),
            "no X-Operation-Id: hashed key"
        );
    }

    #[test]
    fn signatures_never_reach_the_accepted_headers() {
        for source in ["std", "str", "gh", "gen"] {
            let body = "{\"id\":\"evt_1\"}";
            let got = run("POST", source, &signed(source, body), body).unwrap();
            for (name, value) in &got.headers {
                assert!(
                    !name.contains("signature") || value == crate::redact::REDACTED,
                    "{source} {name}"
                );
            }
        }
    }

    /// Method, source, headers, body, expected status.
    type Case<'a> = (&'a str, &'a str, Vec<(String, String)>, String, u16);

    #[test]
    fn each_refusal_has_its_status() {
        let ok = signed("std", "{}");
        let table: Vec<Case> = vec![
            ("GET", "std", ok.clone(), "{}".into(), 405),
            ("POST", "nope", ok.clone(), "{}".into(), 404),
            (
                "POST",
                "std",
                ok.clone(),
                format!("{{\"p\":\"{}\"}}", "x".repeat(1000)),
                413,
            ),
            ("POST", "std", vec![], "{}".into(), 401),
            ("POST", "std", ok.clone(), "{\"tampered\":1}".into(), 401),
            (
                "POST",
                "std",
                signed("std", "not json"),
                "not json".into(),
                400,
            ),
            (
                "POST",
                "str",
                signed("str", "{\"no_id\":1}"),
                "{\"no_id\":1}".into(),
                400,
            ),
        ];
        for (method, source, headers, body, status) in table {
            let err = run(method, source, &headers, &body).unwrap_err();
            assert_eq!(err.status(), status, "{method} {source}: {err:?}");
        }
    }

    #[test]
    fn a_stale_signature_says_so_and_never_reveals_the_expected_signature() {
        let body = "{}";
        let mut headers = signed("gen", body);
        let old = NOW_S - 301;
        headers[0].1 = old.to_string();
        headers[1].1 =
            sign_hmac_sha256(&key(Scheme::HmacSha256, "gen-secret"), old, body.as_bytes());
        let err = run("POST", "gen", &headers, body).unwrap_err();
        assert_eq!((err.status(), err.code()), (401, "SIGNATURE_STALE"));

        let mut wrong = signed("gen", body);
        wrong[1].1 = "00".repeat(32);
        let err = run("POST", "gen", &wrong, body).unwrap_err();
        let expected = sign_hmac_sha256(
            &key(Scheme::HmacSha256, "gen-secret"),
            NOW_S,
            body.as_bytes(),
        );
        assert!(!err.message().contains(&expected));
        assert_eq!(err.code(), "SIGNATURE_INVALID");
    }

    #[test]
    fn a_duplicate_delivery_gets_the_same_identity() {
        let body = "{\"id\":\"evt_dup\"}";
        let a = run("POST", "str", &signed("str", body), body).unwrap();
        let b = run("POST", "str", &signed("str", body), body).unwrap();
        assert_eq!(
            (a.event_id, a.idempotency_key),
            (b.event_id, b.idempotency_key)
        );
    }

    #[test]
    fn a_bad_header_id_is_refused_as_such_even_when_the_signature_cannot_match() {
        let body = "{\"a\":1}";
        let bad = "\u{e9}\u{ff}\u{80}".to_string();
        let table = [
            ("std", "webhook-id", "webhook-id"),
            ("gh", "x-github-delivery", "X-GitHub-Delivery"),
            ("gen", "x-operation-id", "X-Operation-Id"),
        ];
        for (source, header, named) in table {
            for id in [bad.clone(), "i".repeat(257)] {
                let mut headers: Vec<(String, String)> = signed(source, body)
                    .into_iter()
                    .filter(|(k, _)| k != header)
                    .collect();
                headers.push((header.to_string(), id.clone()));
                let err = run("POST", source, &headers, body).unwrap_err();
                assert_eq!(err.code(), "BAD_DELIVERY_ID", "{source} {id:?}");
                assert!(err.message().starts_with(named), "{}", err.message());
            }
        }
        assert_eq!(delivery_id_header(Scheme::Stripe), None);
    }

    #[test]
    fn a_delivery_id_must_be_printable_ascii_of_at_most_256_characters() {
        let long = "a".repeat(257);
        let max = "a".repeat(256);
        let table: [(&str, bool); 7] = [
            ("evt_1", true),
            (&max, true),
            ("with space ~", true),
            (&long, false),
            ("\u{e9}\u{ff}\u{80}", false),
            ("tab\there", false),
            ("", false),
        ];
        for scheme in Scheme::ALL {
            for (id, ok) in table {
                let got = check_delivery_id(scheme, id);
                assert_eq!(got.is_ok(), ok, "{scheme} {id:?}");
                if let Err(r) = got {
                    assert_eq!(r.status(), 400);
                    assert!(r.message().contains(delivery_id_source(scheme)));
                }
            }
        }
    }
}
